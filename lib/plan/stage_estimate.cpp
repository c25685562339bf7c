// Stage costs from model facts and device rates. See Note [Catalogue estimates].
#include "lib/plan/stage_estimate.h"

#include "lib/util/error.h"

namespace hetu::plan {

// Note [Catalogue estimates]: without a profile, a stage's forward takes its FLOPs (its
// layers' and, on the last stage, the LM head's, split over tp) at the device's sustained
// rate plus its tp all_reduces of the hidden activation (ring, on the tp link); the backward
// twice the FLOPs and the same all_reduces. The activation crossing a stage edge (and its
// gradient back) pays the next-stage link once. Memory: f32 parameters / tp, activations
// kept for the backward / tp (each tp rank keeps its shard of the MLP and attention; the
// layer norms' inputs are duplicated, which this ignores), and one micro-batch's logits as
// workspace on the last stage. The gradient sync is a ring all_reduce of the stage's f32
// gradient shard across the replicas; AdamW moves kAdamBytesPerParam per parameter at the
// device's memory bandwidth. With measured times (a profile) the compute is those, split over
// tp with the tp all_reduces added, or as they are when measured at the stage's tp
// (includes_tp); the rest stays estimated here (the caller may replace it with measurements).
double ring_all_reduce_s(double bytes, int64_t members, const Link& link) {
  if (members <= 1) return 0;
  const double p = static_cast<double>(members);
  return 2 * (p - 1) * link.transfer_s(bytes / p);
}

StageCost estimate_stage(const ModelFacts& facts, const StageShape& shape, const DeviceRates& rates) {
  HT_USAGE_CHECK(shape.first_layer >= 0 && shape.last_layer >= shape.first_layer && shape.last_layer < facts.layers,
                 "stage estimate: layers {}-{} of a {}-layer model", shape.first_layer, shape.last_layer, facts.layers);
  HT_USAGE_CHECK(shape.tp >= 1 && shape.micro_batch >= 1 && shape.seq_len >= 1 && shape.replicas >= 1,
                 "stage estimate: tp, micro_batch, seq_len and replicas must be >= 1");
  HT_USAGE_CHECK(rates.flops_per_s > 0 || rates.measured, "stage estimate: the device's sustained FLOP/s must be > 0");
  const double layers = static_cast<double>(shape.last_layer - shape.first_layer + 1);
  const double tokens = static_cast<double>(shape.micro_batch * shape.seq_len);
  const double tp = static_cast<double>(shape.tp);

  double forward_flops = layers * facts.layer_forward_flops_per_token * tokens;
  if (shape.last) forward_flops += facts.head_forward_flops_per_token * tokens;
  const double hidden_bytes = facts.hidden_bytes_per_token * tokens;
  const double tp_comm_s = layers * static_cast<double>(facts.tp_all_reduces_per_layer) *
                           ring_all_reduce_s(hidden_bytes, shape.tp, rates.tp);

  double params = layers * facts.layer_params;
  if (shape.first) params += facts.first_params;
  if (shape.last && !(shape.first && facts.head_shares_embedding)) params += facts.last_params;

  StageCost c;
  if (const auto& m = rates.measured) {
    const double forward = layers * m->layer_forward_s + (shape.first ? m->first_forward_s : 0.0) +
                           (shape.last ? m->last_forward_s : 0.0);
    const double backward = layers * m->layer_backward_s + (shape.first ? m->first_backward_s : 0.0) +
                            (shape.last ? m->last_backward_s : 0.0);
    c.times.forward_s = m->includes_tp ? forward : forward / tp + tp_comm_s;
    c.times.backward_s = m->includes_tp ? backward : backward / tp + tp_comm_s;
  } else {
    c.times.forward_s = forward_flops / tp / rates.flops_per_s + tp_comm_s;
    c.times.backward_s = 2 * forward_flops / tp / rates.flops_per_s + tp_comm_s;
  }
  c.times.send_s = shape.last ? 0 : rates.next_stage.transfer_s(hidden_bytes);
  c.param_bytes = 4 * params / tp;
  c.activation_bytes = layers * facts.layer_activation_bytes_per_token * tokens / tp;
  if (shape.last) c.workspace_bytes = facts.head_activation_bytes_per_token * tokens / tp;
  c.grad_sync_s = ring_all_reduce_s(c.param_bytes, shape.replicas, rates.replicas);
  c.optimizer_s = rates.memory_bytes_per_s > 0 ? kAdamBytesPerParam * params / tp / rates.memory_bytes_per_s : 0.0;
  return c;
}

}  // namespace hetu::plan
