// The tape engine: recording nodes, topological order, gradient accumulation.
#include "lib/autograd/engine.h"

#include <unordered_map>
#include <unordered_set>

#include "lib/autograd/backward_rules.h"
#include "lib/autograd/grad_mode.h"
#include "lib/ops/ops.h"

namespace hetu {

std::vector<Tensor> AutogradNode::run_backward(const Tensor& grad_out) {
  HT_CHECK(!released_, "backward through the {} node a second time: its saved tensors were freed", rule_->name);
  std::vector<Tensor> grads = rule_->fn(ctx_, grad_out);
  HT_CHECK(grads.size() == edges_.size(), "backward rule {} returned {} gradients for {} inputs", rule_->name,
           grads.size(), edges_.size());
  ctx_ = autograd::SavedContext{};  // release saved tensors now
  released_ = true;
  return grads;
}

namespace autograd {
namespace {

thread_local bool t_grad_enabled = true;

// Note [Gradient ownership]: rules return fresh tensors, but also their own incoming
// gradient (add, add_scalar, contiguous pass it through), the same handle for two inputs
// (add of same-shaped operands), or views. A gradient the engine alone holds may be kept as a
// leaf's .grad without a copy, and summed into in place; one that anything else could see
// must not be. `shared` collects every tensor that was seen in two places (handles of one
// TensorImpl cannot be counted); a view shares its storage, which counts.
struct Ownership {
  std::unordered_set<const TensorImpl*> shared;

  bool exclusive(const Tensor& t) const {
    return t.storage().use_count() == 1 && t.is_contiguous() && shared.count(t.impl()) == 0;
  }
  // The rule for one node ran: its gradient and any handle it returned twice are shared.
  void after_rule(const Tensor& grad_out, const std::vector<Tensor>& grads) {
    for (size_t i = 0; i < grads.size(); ++i) {
      if (!grads[i].defined()) continue;
      bool twice = grads[i].same(grad_out);
      for (size_t j = 0; j < grads.size() && !twice; ++j) twice = j != i && grads[i].same(grads[j]);
      if (twice) shared.insert(grads[i].impl());
    }
  }
};

void accumulate_leaf(const Tensor& leaf, const Tensor& grad, const Ownership& own) {
  HT_CHECK(grad.shape() == leaf.shape(), "gradient of shape {} for a leaf of shape {}", shape_str(grad.shape()),
           shape_str(leaf.shape()));
  const bool converted = grad.dtype() != leaf.dtype();
  const Tensor g = converted ? grad.to(leaf.dtype()) : grad;
  if (!leaf.grad().defined()) {
    // Own the memory: g may alias another gradient or a view (see Note [Gradient ownership]).
    leaf.set_grad(converted || own.exclusive(g) ? g : g.clone());
  } else {
    leaf.set_grad(ops::add(leaf.grad(), g));  // not in place: a caller may hold the old .grad
  }
}

// pending slot += grad, in place when the engine alone holds the slot.
void accumulate_pending(Tensor& slot, const Tensor& grad, const Ownership& own) {
  if (own.exclusive(slot) && slot.shape() == grad.shape() && slot.dtype() == grad.dtype()) {
    ops::add_(slot, grad);
  } else {
    slot = ops::add(slot, grad);
  }
}

}  // namespace

bool grad_enabled() { return t_grad_enabled; }
NoGradGuard::NoGradGuard() : previous_(t_grad_enabled) { t_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { t_grad_enabled = previous_; }

namespace {

// A node of `rule` on `out` with an edge per input (empty for inputs that need no gradient);
// none when no input requires grad.
void record_edges(Tensor& out, const BackwardRule* rule, SavedContext ctx, std::span<const Tensor* const> inputs) {
  std::vector<Edge> edges;
  bool any = false;
  for (const Tensor* input : inputs) {
    Edge edge;
    if (input->defined() && input->requires_grad()) {
      any = true;
      if (input->grad_fn()) {
        edge.node = input->grad_fn();
      } else {
        edge.leaf = *input;
      }
    }
    edges.push_back(std::move(edge));
  }
  if (!any) return;
  out.set_requires_grad(true);
  out.set_grad_fn(std::make_shared<AutogradNode>(rule, std::move(ctx), std::move(edges)));
}

}  // namespace

Tensor record(std::string_view name, std::span<const Tensor* const> inputs, Tensor out, SavedContext ctx) {
  if (!grad_enabled()) return out;
  record_edges(out, &find_rule(name), std::move(ctx), inputs);
  return out;
}

void backward(const Tensor& root, const Tensor& grad) {
  HT_CHECK(root.requires_grad(), "backward: the tensor does not require grad (no input of it required grad)");
  Tensor seed = grad;
  if (!seed.defined()) {
    HT_CHECK(root.numel() == 1, "backward: a gradient is needed for a tensor of shape {} (only scalars get 1)",
             shape_str(root.shape()));
    seed = ones(root.shape(), root.dtype(), root.device());
  }
  HT_CHECK(seed.shape() == root.shape(), "backward: gradient shape {} for a tensor of shape {}",
           shape_str(seed.shape()), shape_str(root.shape()));
  NoGradGuard no_grad;
  Ownership own;
  own.shared.insert(seed.impl());  // the caller's tensor
  if (!root.grad_fn()) {  // the root is itself a leaf
    accumulate_leaf(root, seed, own);
    return;
  }
  // Topological order by iterative DFS (post-order), so deep graphs do not overflow the stack.
  std::vector<AutogradNode*> order;
  std::unordered_set<AutogradNode*> visited;
  std::vector<std::pair<AutogradNode*, size_t>> stack = {{root.grad_fn().get(), 0}};
  visited.insert(root.grad_fn().get());
  while (!stack.empty()) {
    auto& [node, next_edge] = stack.back();
    if (next_edge < node->edges().size()) {
      AutogradNode* child = node->edges()[next_edge++].node.get();
      if (child != nullptr && visited.insert(child).second) stack.push_back({child, 0});
    } else {
      order.push_back(node);
      stack.pop_back();
    }
  }
  std::unordered_map<AutogradNode*, Tensor> pending = {{root.grad_fn().get(), seed}};
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    AutogradNode* node = *it;
    auto found = pending.find(node);
    if (found == pending.end()) continue;  // no gradient reached this node
    const Tensor grad_out = std::move(found->second);
    pending.erase(found);
    std::vector<Tensor> grads = node->run_backward(grad_out);
    own.after_rule(grad_out, grads);
    for (size_t i = 0; i < grads.size(); ++i) {
      const Edge& edge = node->edges()[i];
      if (!edge.needs_grad() || !grads[i].defined()) continue;
      if (edge.node) {
        auto [slot, inserted] = pending.try_emplace(edge.node.get(), grads[i]);
        if (!inserted) accumulate_pending(slot->second, grads[i], own);
      } else {
        accumulate_leaf(edge.leaf, grads[i], own);
      }
    }
  }
}

void record_node(Tensor& out, const BackwardRule* rule, SavedContext ctx, const Tensor& input) {
  Edge edge;
  if (input.grad_fn()) {
    edge.node = input.grad_fn();
  } else {
    edge.leaf = input;
  }
  out.set_requires_grad(true);
  out.set_grad_fn(std::make_shared<AutogradNode>(rule, std::move(ctx), std::vector<Edge>{edge}));
}

void record_node(Tensor& out, const BackwardRule* rule, SavedContext ctx, std::initializer_list<const Tensor*> inputs) {
  record_edges(out, rule, std::move(ctx), std::span<const Tensor* const>(inputs.begin(), inputs.size()));
}

}  // namespace autograd
}  // namespace hetu
