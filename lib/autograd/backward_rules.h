// The backward rules: one table (backward_rules.cpp) mapping each differentiable op, and
// each differentiable view (reshape, transpose, ...), to a function from the saved context
// and the output gradient to the input gradients. Rules are written with the public ops
// in lib/ops, so they run on every backend that has the forward ops.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "lib/autograd/node.h"

namespace hetu::autograd {

using BackwardFn = std::vector<Tensor> (*)(const SavedContext& ctx, const Tensor& grad_out);
// into += what `fn` returns for the rule's one input, in place, bit for bit the same sum.
using AccumulateFn = void (*)(const SavedContext& ctx, const Tensor& grad_out, const Tensor& into);

struct BackwardRule {
  std::string_view name;  // the op name in lib/ops/op_list.h, or the view name
  BackwardFn fn;
  // A slice view (narrow, split; SavedContext ints {dim, start}, shapes {input}): the engine
  // may write the gradient into the slice of the input's pending gradient instead of running
  // `fn`, which stays the reference (see Note [Slice gradients] in engine.cpp).
  bool slice_view = false;
  // A sparse gradient (embedding: the rows of the ids): when its one input already holds a
  // gradient the engine alone owns, the engine adds into that instead of running `fn` and
  // adding a full-size result (see Note [Sparse gradients] in engine.cpp).
  AccumulateFn accumulate = nullptr;
};

std::span<const BackwardRule> backward_rules();
// The rule for `name`; throws when there is none (an op recorded without a rule is a bug).
const BackwardRule& find_rule(std::string_view name);

}  // namespace hetu::autograd
