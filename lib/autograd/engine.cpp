// The tape engine: recording nodes, topological order, gradient accumulation.
#include "lib/autograd/engine.h"

#include <algorithm>
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
  release_saved();
  return grads;
}

void AutogradNode::release_saved() {
  HT_CHECK(!released_, "backward through the {} node a second time: its saved tensors were freed", rule_->name);
  ctx_ = autograd::SavedContext{};  // release saved tensors now
  released_ = true;
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
  // Leaves whose .grad this backward set: memory the engine made and alone holds (nothing
  // outside can have read a .grad while backward runs), so it may be summed into in place.
  std::unordered_set<const TensorImpl*> fresh_leaves;

  bool exclusive(const Tensor& t) const {
    return t.storage().use_count() == 1 && t.is_contiguous() && shared.count(t.impl()) == 0;
  }
  // leaf's .grad when this backward set it, else undefined.
  Tensor fresh_grad(const Tensor& leaf) const {
    return fresh_leaves.count(leaf.impl()) != 0 ? leaf.grad() : Tensor();
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

void accumulate_leaf(const Tensor& leaf, const Tensor& grad, Ownership& own) {
  HT_CHECK(grad.shape() == leaf.shape(), "gradient of shape {} for a leaf of shape {}", shape_str(grad.shape()),
           shape_str(leaf.shape()));
  const bool converted = grad.dtype() != leaf.dtype();
  const Tensor g = converted ? grad.to(leaf.dtype()) : grad;
  if (const Tensor mine = own.fresh_grad(leaf); mine.defined()) {
    ops::add_(mine, g);  // set earlier in this backward: no one else holds it
    return;
  }
  if (!leaf.grad().defined()) {
    // Own the memory: g may alias another gradient or a view (see Note [Gradient ownership]).
    leaf.set_grad(converted || own.exclusive(g) ? g : g.clone());
  } else {
    leaf.set_grad(ops::add(leaf.grad(), g));  // not in place: a caller may hold the old .grad
  }
  own.fresh_leaves.insert(leaf.impl());
}

// pending slot += grad, in place when the engine alone holds the slot.
void accumulate_pending(Tensor& slot, const Tensor& grad, const Ownership& own) {
  if (own.exclusive(slot) && slot.shape() == grad.shape() && slot.dtype() == grad.dtype()) {
    ops::add_(slot, grad);
  } else {
    slot = ops::add(slot, grad);
  }
}

// Note [Slice gradients]: the gradient of a narrow or split piece is its input's gradient with
// zeros outside the slice. narrow_rule (the reference) builds exactly that, one full-size
// tensor per piece: for the q/k/v split of a fused projection, three zero-filled buffers and
// two full-size additions per layer. When the piece's input came from another node (not a
// leaf), the engine instead copies the piece's gradient into the slice of ONE pending buffer
// of the input's shape, allocated uninitialised, and records which ranges of the slicing dim
// were written. Just before that node runs, or before a whole-tensor gradient is added to the
// buffer, the ranges no slice wrote are zero-filled (for split pieces that all got a gradient:
// none). A slice along another dim, or one overlapping a written range, first completes the
// buffer and is then added into its slice in place.
// When the first piece's gradient already IS that slice of a contiguous tensor of the input's
// shape (same storage; the q/k/v gradients of attention over a fused projection are laid out
// so, Note [Fused q/k/v gradients] in lib/ops/attention.cpp), the engine adopts that tensor as
// the buffer instead of allocating one, and a later piece that is its own slice of it is not
// copied. The adopted storage may still be seen by other tensors (pieces not yet arrived, a
// caller's gradient), so the engine writes into it (gap zero-fill, a copied piece) only when
// it alone holds the storage, and otherwise first clones the buffer.
struct SliceCover {
  int64_t dim = 0;
  std::vector<std::pair<int64_t, int64_t>> ranges;  // [start, end) written along dim
  bool adopted = false;  // the buffer is another tensor's storage (see above)

  bool overlaps(int64_t start, int64_t end) const {
    for (auto [s, e] : ranges) {
      if (start < e && s < end) return true;
    }
    return false;
  }
};

// Note [Sparse gradients]: an embedding's gradient is zero outside the rows of its ids. For
// a tied table (GPT-2's wte is also the LM head) the head's dense gradient reaches the table
// first; building the embedding's (V, C) gradient and adding it would write and read the
// whole table twice more (at V = 50,257 most of a small model's gradient bytes). When the
// input's gradient is already memory the engine alone holds (a pending buffer, or a .grad set
// in this backward), a rule with `accumulate` adds its rows into it in place instead; the
// sum is the same, bit for bit (repeats summed first, then added), and `fn` stays the
// reference, used whenever nothing is there yet.

// The contiguous tensor of `shape` whose slice [start, start + piece.size(dim)) along `dim`
// `piece` is, in piece's storage; undefined when piece is no such slice.
Tensor whole_of_slice(const Tensor& piece, int64_t dim, int64_t start, const Shape& shape) {
  if (static_cast<int64_t>(shape.size()) != piece.dim()) return Tensor();
  const Shape strides = contiguous_strides(shape);
  for (int64_t i = 0; i < piece.dim(); ++i) {
    const size_t u = static_cast<size_t>(i);
    if (i != dim && piece.size(i) != shape[u]) return Tensor();
    if (piece.size(i) > 1 && piece.strides()[u] != strides[u]) return Tensor();
  }
  const int64_t offset = piece.offset() - start * strides[static_cast<size_t>(dim)];
  const auto bytes = static_cast<size_t>(offset + shape_numel(shape)) * dtype_size(piece.dtype());
  if (offset < 0 || bytes > piece.storage()->nbytes()) return Tensor();
  return Tensor(std::make_shared<TensorImpl>(piece.storage(), piece.dtype(), shape, strides, offset));
}

// piece is the slice [start, ...) along dim of buffer, in buffer's own memory.
bool is_slice_of(const Tensor& piece, const Tensor& buffer, int64_t dim, int64_t start) {
  if (piece.storage() != buffer.storage() || piece.dtype() != buffer.dtype()) return false;
  const Tensor whole = whole_of_slice(piece, dim, start, buffer.shape());
  return whole.defined() && whole.offset() == buffer.offset();
}

// An adopted buffer that others may still see becomes a private copy before it is written.
void own_before_write(Tensor& buffer, const SliceCover& cover) {
  if (cover.adopted && buffer.storage().use_count() > 1) buffer = buffer.clone();
}

// Zeros wherever `cover` wrote nothing.
void fill_gaps(Tensor& buffer, SliceCover& cover) {
  std::sort(cover.ranges.begin(), cover.ranges.end());
  int64_t covered = 0;
  for (auto [start, end] : cover.ranges) covered += end - start;  // ranges never overlap
  if (covered == buffer.size(cover.dim)) return;
  own_before_write(buffer, cover);
  int64_t at = 0;
  for (auto [start, end] : cover.ranges) {
    if (start > at) ops::fill_(buffer.narrow(cover.dim, at, start - at), 0.0);
    at = std::max(at, end);
  }
  const int64_t size = buffer.size(cover.dim);
  if (at < size) ops::fill_(buffer.narrow(cover.dim, at, size - at), 0.0);
}

// The summed output gradient of each node not yet run; some buffers are still partial (Note
// [Slice gradients]).
class PendingGrads {
 public:
  explicit PendingGrads(AutogradNode* root, const Tensor& seed) { grads_.emplace(root, seed); }

  // node's complete gradient, removed from the table; undefined when none reached the node.
  Tensor take(AutogradNode* node) {
    auto found = grads_.find(node);
    if (found == grads_.end()) return Tensor();
    Tensor grad = std::move(found->second);
    grads_.erase(found);
    complete(node, grad);
    return grad;
  }

  void add(AutogradNode* node, const Tensor& grad, const Ownership& own) {
    auto [slot, inserted] = grads_.try_emplace(node, grad);
    if (inserted) return;
    complete(node, slot->second);
    accumulate_pending(slot->second, grad, own);
  }

  // node's pending gradient, completed, when the engine alone holds it; else undefined.
  Tensor exclusive_slot(AutogradNode* node, const Ownership& own) {
    auto found = grads_.find(node);
    if (found == grads_.end()) return Tensor();
    complete(node, found->second);
    return own.exclusive(found->second) ? found->second : Tensor();
  }

  // grad into [start, start + grad.size(dim)) along `dim` of node's gradient, of `shape`.
  // false (nothing done) when node's pending gradient has another shape or dtype.
  bool add_slice(AutogradNode* node, const Tensor& grad, int64_t dim, int64_t start, const Shape& shape,
                 const Ownership& own) {
    const int64_t end = start + grad.size(dim);
    auto [slot, inserted] = grads_.try_emplace(node);
    if (inserted) {
      if (Tensor whole = whole_of_slice(grad, dim, start, shape); whole.defined()) {
        slot->second = std::move(whole);
        partial_[node] = SliceCover{dim, {{start, end}}, /*adopted=*/true};
        return true;
      }
      slot->second = empty(shape, grad.dtype(), grad.device());
      ops::copy_(slot->second.narrow(dim, start, end - start), grad);
      partial_[node] = SliceCover{dim, {{start, end}}};
      return true;
    }
    Tensor& buffer = slot->second;
    if (buffer.shape() != shape || buffer.dtype() != grad.dtype()) return false;
    auto cover = partial_.find(node);
    if (cover != partial_.end() && cover->second.dim == dim && !cover->second.overlaps(start, end)) {
      if (!is_slice_of(grad, buffer, dim, start)) {
        own_before_write(buffer, cover->second);
        ops::copy_(buffer.narrow(dim, start, end - start), grad);
      }
      cover->second.ranges.emplace_back(start, end);
      return true;
    }
    complete(node, buffer);
    if (!own.exclusive(buffer)) buffer = buffer.clone();
    ops::add_(buffer.narrow(dim, start, end - start), grad);
    return true;
  }

 private:
  void complete(AutogradNode* node, Tensor& buffer) {
    auto cover = partial_.find(node);
    if (cover == partial_.end()) return;
    fill_gaps(buffer, cover->second);
    partial_.erase(cover);
  }

  std::unordered_map<AutogradNode*, Tensor> grads_;
  std::unordered_map<AutogradNode*, SliceCover> partial_;
};

}  // namespace

bool grad_enabled() { return t_grad_enabled; }
NoGradGuard::NoGradGuard() : previous_(t_grad_enabled) { t_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { t_grad_enabled = previous_; }
GradGuard::GradGuard() : previous_(t_grad_enabled) { t_grad_enabled = true; }
GradGuard::~GradGuard() { t_grad_enabled = previous_; }

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
  PendingGrads pending(root.grad_fn().get(), seed);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    AutogradNode* node = *it;
    const Tensor grad_out = pending.take(node);
    if (!grad_out.defined()) continue;  // no gradient reached this node
    if (node->rule().slice_view && node->edges()[0].node) {  // See Note [Slice gradients]
      const SavedContext& c = node->saved();
      if (pending.add_slice(node->edges()[0].node.get(), grad_out, c.ints[0], c.ints[1], c.shapes[0], own)) {
        node->release_saved();
        continue;
      }
    }
    if (node->rule().accumulate && node->edges().size() == 1) {  // See Note [Sparse gradients]
      const Edge& edge = node->edges()[0];
      const Tensor into = edge.node ? pending.exclusive_slot(edge.node.get(), own) : own.fresh_grad(edge.leaf);
      if (into.defined() && into.dtype() == grad_out.dtype()) {
        node->rule().accumulate(node->saved(), grad_out, into);
        node->release_saved();
        continue;
      }
    }
    std::vector<Tensor> grads = node->run_backward(grad_out);
    own.after_rule(grad_out, grads);
    for (size_t i = 0; i < grads.size(); ++i) {
      const Edge& edge = node->edges()[i];
      if (!edge.needs_grad() || !grads[i].defined()) continue;
      if (edge.node) {
        pending.add(edge.node.get(), grads[i], own);
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
