// Reverse-mode differentiation over the tape: backward(loss) walks the nodes that lead to
// `loss` in reverse topological order, runs each rule once with the summed gradient of its
// output, and accumulates (+=) into the .grad of every leaf that requires grad.
//
//   Tensor w = ones({3}).set_requires_grad(true);
//   Tensor loss = autograd::sum(autograd::mul(w, w));
//   autograd::backward(loss);          // w.grad() == [2, 2, 2]
#pragma once

#include <initializer_list>
#include <span>
#include <string_view>

#include "lib/autograd/node.h"
#include "lib/core/tensor.h"

namespace hetu::autograd {

// `root` must be a one-element tensor (the seed gradient is 1) unless `grad` is given.
void backward(const Tensor& root, const Tensor& grad = Tensor());

// Records `out` as produced by rule `name` from `inputs` when grad mode is on and an input
// requires grad; returns `out` (marked requires_grad, with its node) either way.
Tensor record(std::string_view name, std::span<const Tensor* const> inputs, Tensor out, SavedContext ctx);
inline Tensor record(std::string_view name, std::initializer_list<const Tensor*> inputs, Tensor out, SavedContext ctx) {
  return record(name, std::span<const Tensor* const>(inputs.begin(), inputs.size()), std::move(out), std::move(ctx));
}

}  // namespace hetu::autograd
