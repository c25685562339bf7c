// The autograd tape: each differentiable op that sees an input requiring grad records an
// AutogradNode on its output. The node names its backward rule (backward_rules.h), keeps
// what the rule needs (SavedContext) and an Edge per input: the input's own node, or the
// leaf tensor whose .grad receives the gradient. Saved tensors are freed as soon as the
// node's backward has run.
#pragma once

#include <initializer_list>
#include <memory>
#include <string_view>
#include <vector>

#include "lib/core/tensor.h"

namespace hetu::autograd {

// What a backward rule may read: saved tensors plus small integer/real/shape arguments.
struct SavedContext {
  std::vector<Tensor> tensors;
  std::vector<int64_t> ints;
  std::vector<double> reals;
  std::vector<Shape> shapes;
  // Anything else a rule defined above autograd needs (e.g. dist's annotations); the rule
  // that recorded it knows its type. Freed with the rest after the backward ran.
  std::shared_ptr<const void> payload = nullptr;
};

struct BackwardRule;

struct Edge {
  std::shared_ptr<AutogradNode> node;  // set when the input came from another op
  Tensor leaf;                         // set when the input is a leaf that requires grad
  bool needs_grad() const { return node != nullptr || leaf.defined(); }
};

// Records a node of `rule` (one defined above autograd, e.g. dist's redistribute) on `out`,
// with one edge to `input` (its node, or the leaf itself), and marks `out` as requiring grad.
void record_node(Tensor& out, const BackwardRule* rule, SavedContext ctx, const Tensor& input);
// The same with an edge per input (the rule returns one gradient per input); inputs that do
// not require grad get none. Records nothing when no input requires grad.
void record_node(Tensor& out, const BackwardRule* rule, SavedContext ctx, std::initializer_list<const Tensor*> inputs);

}  // namespace hetu::autograd

namespace hetu {

class AutogradNode {
 public:
  AutogradNode(const autograd::BackwardRule* rule, autograd::SavedContext ctx, std::vector<autograd::Edge> edges)
      : rule_(rule), ctx_(std::move(ctx)), edges_(std::move(edges)) {}

  const autograd::BackwardRule& rule() const { return *rule_; }
  const std::vector<autograd::Edge>& edges() const { return edges_; }
  // Runs the rule (one gradient per input, undefined where not needed) and frees ctx.
  std::vector<Tensor> run_backward(const Tensor& grad_out);
  // What the rule would read; for the engine's own handling of slice views.
  const autograd::SavedContext& saved() const { return ctx_; }
  // Frees ctx as run_backward does, for a node whose gradient the engine routed itself.
  void release_saved();

 private:
  const autograd::BackwardRule* rule_;
  autograd::SavedContext ctx_;
  std::vector<autograd::Edge> edges_;
  bool released_ = false;
};

}  // namespace hetu
