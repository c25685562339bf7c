// Vocab-parallel cross-entropy: one fused statistics pass per rank, a cross-rank combination
// of (N)-sized vectors, and one autograd node whose backward is one fused pass.
//
//   local:  m_r, s_r = Σ_c exp(z - m_r), t_r = z[target] or 0   (ops::cross_entropy_shard_stats)
//   M = max_r m_r         (all_gather of the row maxima, max over ranks)
//   S = Σ_r s_r · exp(m_r - M),  T = Σ_r t_r                    (one all_reduce of [S_r ; t_r])
//   loss = Σ_kept (log S - (T - M)) / normalizer
//   dz_r = G / normalizer · (exp(z_r - M) / S - onehot_r(target))   (ops::cross_entropy_shard_backward)
//
// Note [Gradient of the duplicated loss]: the loss is duplicated over the group, so the
// gradient each rank's backward receives is partial (lib/hspmd/redistribute.h): the trainer
// seeds 1 on one rank and 0 on the others. G is their sum (an all_reduce of one element), so
// every rank gets the gradient of its shard whatever the seeding, exactly as the composition
// of reduce_partial (P -> D, gradient all-reduced) this node replaces did.
#include "lib/nn/parallel_cross_entropy.h"

#include <algorithm>
#include <memory>
#include <string_view>

#include "lib/autograd/backward_rules.h"
#include "lib/autograd/functions.h"
#include "lib/autograd/grad_mode.h"
#include "lib/nn/tensor_parallel.h"
#include "lib/ops/ops.h"
#include "lib/util/error.h"

namespace hetu::nn {
namespace ag = autograd;
namespace {

// What the backward reads besides SavedContext::tensors {logits, targets, max, sum_exp} and
// ints {vocab_offset, vocab, ignore_index}, reals {1 / normalizer}. The communicator is owned
// by the caller and outlives the backward: see Note [Communicator lifetime] in
// lib/hspmd/redistribute.cpp.
struct GroupSaved {
  Communicator* comm;
  DeviceGroup group;
};

// See Note [Gradient of the duplicated loss]: G = Σ over the group of each rank's gradient (1).
Tensor group_gradient(const GroupSaved& saved, const Tensor& grad_out) {
  Tensor total = empty({1}, grad_out.dtype(), grad_out.device());
  total.copy_from(grad_out.reshape({1}));
  saved.comm->all_reduce(total, saved.group);
  return total;
}

std::vector<Tensor> parallel_cross_entropy_rule(const autograd::SavedContext& c, const Tensor& grad_out) {
  const auto& saved = *static_cast<const GroupSaved*>(c.payload.get());
  const Tensor& logits = c.tensors[0];
  const Tensor& max = c.tensors[2];
  const Tensor total = group_gradient(saved, grad_out);
  const Tensor grad_rows = ops::mul_scalar(total.expand({logits.size(0)}), c.reals[0]);
  return {ops::cross_entropy_shard_backward(grad_rows, logits, c.tensors[1], max, c.tensors[3], c.ints[0], c.ints[1],
                                            c.ints[2])};
}

const autograd::BackwardRule kParallelCrossEntropyRule{"parallel_cross_entropy", parallel_cross_entropy_rule};

// The fused form: tensors {dhidden, dweight}, computed with the loss for G = 1.
std::vector<Tensor> parallel_linear_cross_entropy_rule(const autograd::SavedContext& c, const Tensor& grad_out) {
  const double g = group_gradient(*static_cast<const GroupSaved*>(c.payload.get()), grad_out).item();
  if (g == 1.0) return {c.tensors[0], c.tensors[1]};
  return {ops::mul_scalar(c.tensors[0], g), ops::mul_scalar(c.tensors[1], g)};
}

const autograd::BackwardRule kParallelLinearCrossEntropyRule{"parallel_linear_cross_entropy",
                                                             parallel_linear_cross_entropy_rule};

// Shared by both forms: the rank's real (unpadded) columns, and the checks on them.
int64_t real_columns(std::string_view op, int64_t local_vocab, int64_t vocab_offset, int64_t vocab,
                     const TensorParallel* tp) {
  const int64_t cols = std::clamp<int64_t>(vocab - vocab_offset, 0, local_vocab);
  HT_CHECK(cols > 0 || tp == nullptr || tp->size() == 1, "{}: rank {} of the tensor-parallel group holds only padding "
           "columns; use fewer tensor-parallel ranks for this vocabulary", op, tp == nullptr ? 0 : tp->index());
  return cols;
}

}  // namespace

ops::VocabRowStats combine_vocab_shards(const ops::CrossEntropyShardStats& local, const TensorParallel& tp) {
  const int64_t n = local.max.size(0);
  // M: the row max over the whole vocabulary (a constant shift: no gradient flows through it).
  Tensor gathered = empty({tp.size() * n}, local.max.dtype(), local.max.device());
  tp.comm().all_gather(local.max, gathered, tp.group());
  Tensor max = ops::max(gathered.view({tp.size(), n}), 0);
  // [Σ exp(z - M) here ; target logit here], summed over the group by one all_reduce.
  Tensor packed = ops::concat({ops::mul(local.sum_exp, ops::exp(ops::sub(local.max, max))), local.target_logit}, 0);
  tp.comm().all_reduce(packed, tp.group());
  return {max, packed.narrow(0, 0, n), packed.narrow(0, n, n)};
}

Tensor parallel_cross_entropy(const Tensor& logits, const Tensor& targets, int64_t vocab_offset, int64_t vocab,
                              const TensorParallel* tp, double normalizer, int64_t ignore_index) {
  HT_CHECK(logits.dim() == 2 && targets.dim() == 1 && targets.size(0) == logits.size(0),
           "parallel_cross_entropy: logits (N, V) and targets (N) expected, got {} and {}", shape_str(logits.shape()),
           shape_str(targets.shape()));
  const int64_t cols = real_columns("parallel_cross_entropy", logits.size(1), vocab_offset, vocab, tp);
  if (tp == nullptr || tp->size() == 1) {
    const Tensor z = cols == logits.size(1) ? logits : ag::narrow(logits, 1, 0, cols);
    return ag::cross_entropy(z, targets, ignore_index, normalizer);
  }
  HT_CHECK(targets.device() == logits.device(), "parallel_cross_entropy: targets on {} but logits on {}",
           targets.device().str(), logits.device().str());
  Communicator& comm = tp->comm();
  const bool record = autograd::grad_enabled() && logits.requires_grad();
  autograd::NoGradGuard no_grad;
  int64_t count = 0;
  const ops::CrossEntropyShardStats local =
      ops::cross_entropy_shard_stats(logits.detach(), targets, vocab_offset, vocab, ignore_index, &count);
  const ops::VocabRowStats global = combine_vocab_shards(local, *tp);
  const Tensor &max = global.max, &sum_exp = global.sum_exp, &target_logit = global.target_logit;
  // log S - (T - M), never M + log S, which rounds log S away for huge logits.
  const Tensor per_token = ops::mul(ops::sub(ops::log(sum_exp), ops::sub(target_logit, max)), local.kept);
  // A normalizer below 1 is fp16's loss scale folded in (Note [Loss scale], parallel_engine.cpp).
  const double scale = 1.0 / (normalizer > 0 ? normalizer : static_cast<double>(std::max<int64_t>(count, 1)));
  Tensor loss = ops::mul_scalar(ops::sum(per_token), scale);
  if (!record) return loss;
  autograd::SavedContext ctx;
  ctx.tensors = {logits.detach(), targets, max, sum_exp};
  ctx.ints = {vocab_offset, vocab, ignore_index};
  ctx.reals = {scale};
  ctx.payload = std::make_shared<const GroupSaved>(GroupSaved{&comm, tp->group()});
  autograd::record_node(loss, &kParallelCrossEntropyRule, std::move(ctx), logits);
  return loss;
}

Tensor parallel_linear_cross_entropy(const Tensor& hidden, const Tensor& weight, const Tensor& targets,
                                     int64_t vocab_offset, int64_t vocab, const TensorParallel* tp, double normalizer,
                                     int64_t ignore_index) {
  HT_CHECK(hidden.dim() == 2 && weight.dim() == 2 && targets.dim() == 1,
           "parallel_linear_cross_entropy: hidden (N, C), weight (V, C) and targets (N) expected, got {}, {} and {}",
           shape_str(hidden.shape()), shape_str(weight.shape()), shape_str(targets.shape()));
  real_columns("parallel_linear_cross_entropy", weight.size(0), vocab_offset, vocab, tp);
  if (tp == nullptr || tp->size() == 1) {
    return ag::linear_cross_entropy(hidden, weight, targets, vocab - vocab_offset, ignore_index, normalizer);
  }
  HT_CHECK(targets.device() == hidden.device(), "parallel_linear_cross_entropy: targets on {} but hidden on {}",
           targets.device().str(), hidden.device().str());
  const bool record =
      autograd::grad_enabled() && (hidden.requires_grad() || weight.requires_grad());
  autograd::NoGradGuard no_grad;
  ops::LinearCrossEntropyOptions options;
  options.vocab_offset = vocab_offset;
  options.vocab = vocab;
  options.ignore_index = ignore_index;
  options.normalizer = normalizer;
  options.grads = record;
  options.combine = [tp](const ops::CrossEntropyShardStats& local) { return combine_vocab_shards(local, *tp); };
  ops::LinearCrossEntropyResult r = ops::linear_cross_entropy(hidden.detach(), weight.detach(), targets, options);
  if (!record) return r.loss;
  autograd::SavedContext ctx;
  ctx.tensors = {r.dhidden, r.dweight};
  ctx.payload = std::make_shared<const GroupSaved>(GroupSaved{&tp->comm(), tp->group()});
  autograd::record_node(r.loss, &kParallelLinearCrossEntropyRule, std::move(ctx), {&hidden, &weight});
  return r.loss;
}

}  // namespace hetu::nn
