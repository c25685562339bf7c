// Activation recomputation (recompute.h): the full-block node and the selective scope.
#include "lib/autograd/recompute.h"

#include <array>
#include <memory>
#include <utility>

#include "lib/autograd/backward_rules.h"
#include "lib/autograd/engine.h"
#include "lib/autograd/grad_mode.h"

namespace hetu::autograd {

// Note [Activation recomputation]: a transformer block's backward reads ~34·B·T·C bytes of
// saved activations (Megatron's count, f32 and no score matrix here: the attention is fused),
// and a pipeline stage keeps them for every micro-batch in flight. `full` keeps a block's
// input only: the forward runs without the tape, the output's one node keeps (fn, input), and
// its backward reruns fn on a detached input with the tape on, then runs the engine on that
// small graph with the output's gradient as seed. The block's parameters are leaves of the
// small graph, so their .grad accumulates there exactly as it would in one backward (the same
// rules, in the same order: the small graph's nodes are ordered as they are inside the big
// one, since no path leaves the block except through its input), and the input's gradient
// is returned to the outer engine as the node's one gradient. Tensor-parallel collectives in
// the block run again in the rerun, on every rank of the group at the same point of its
// schedule. Cost: one more forward of the block (~1/3 of its training FLOPs).
// `selective` keeps everything but what the attention core alone needs, recomputed from q, k, v
// in backward (Megatron's selective recomputation drops the score-sized softmax intermediates).
// hetu's attention is fused and keeps no score matrix: what it alone keeps is its log-sum-exp
// (B·H·T floats a layer); its output is also the output projection's saved input (one buffer),
// so it stays. The cost is one attention forward more, ~4·T·C FLOPs per token a layer. So in
// hetu `selective` saves little memory and costs little time, as the issue that asked for it
// expected of flash-style attention; `full` is the trade that matters.
namespace {

thread_local bool t_selective = false;

struct FullRecompute {
  std::function<Tensor(const Tensor&)> fn;
  Tensor input;          // detached
  bool input_needs_grad = false;
};

std::vector<Tensor> full_recompute_rule(const SavedContext& ctx, const Tensor& grad_out) {
  const auto& saved = *static_cast<const FullRecompute*>(ctx.payload.get());
  Tensor x = saved.input.detach();
  if (saved.input_needs_grad) x.set_requires_grad(true);
  Tensor y;
  {
    GradGuard tape;
    y = saved.fn(x);
  }
  if (y.requires_grad()) backward(y, grad_out);
  return {saved.input_needs_grad ? x.grad() : Tensor()};
}

const BackwardRule kFullRecomputeRule{"recompute_full", full_recompute_rule};

constexpr std::array<std::string_view, 3> kNames{"none", "selective", "full"};

}  // namespace

std::string_view recompute_name(Recompute mode) { return kNames[static_cast<size_t>(mode)]; }

std::optional<Recompute> parse_recompute(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<Recompute>(i);
  }
  return std::nullopt;
}

Tensor recompute_full(std::function<Tensor(const Tensor&)> fn, const Tensor& input) {
  if (!grad_enabled()) return fn(input);
  Tensor out;
  {
    NoGradGuard no_tape;
    out = fn(input);
  }
  auto saved = std::make_shared<FullRecompute>();
  saved->fn = std::move(fn);
  saved->input = input.detach();
  saved->input_needs_grad = input.requires_grad();
  Edge edge;  // none when the input needs no gradient: the node still runs for the parameters
  if (input.requires_grad()) {
    if (input.grad_fn()) {
      edge.node = input.grad_fn();
    } else {
      edge.leaf = input;
    }
  }
  SavedContext ctx;
  ctx.payload = std::move(saved);
  out.set_requires_grad(true);
  out.set_grad_fn(std::make_shared<AutogradNode>(&kFullRecomputeRule, std::move(ctx), std::vector<Edge>{edge}));
  return out;
}

SelectiveRecomputeGuard::SelectiveRecomputeGuard() : previous_(t_selective) { t_selective = true; }
SelectiveRecomputeGuard::~SelectiveRecomputeGuard() { t_selective = previous_; }
bool selective_recompute() { return t_selective; }

}  // namespace hetu::autograd
