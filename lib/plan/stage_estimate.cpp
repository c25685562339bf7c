// Stage costs from model facts and device rates. See Note [Catalogue estimates].
#include "lib/plan/stage_estimate.h"

#include <algorithm>

#include "lib/util/error.h"

namespace hetu::plan {

// Note [Catalogue estimates]: without a profile, a stage's forward takes its FLOPs (its
// layers' and, on the last stage, the LM head's, split over tp) at the device's sustained
// rate plus its tp all_reduces of the hidden activation (ring, on the tp link); the backward
// twice the FLOPs and the same all_reduces. The part of that compute growing with the square
// of the sequence length (attention's share of the layers' FLOPs, or a profile's measured
// attention time) is kept apart (attention_forward_s, attention_backward_s) for pricing
// documents of other lengths (document_cost.h); measured times are split by the FLOP share
// where the profile did not measure it. The activation crossing a stage edge (and its
// gradient back) pays the next-stage link once. Memory: f32 parameters / tp, activations
// kept for the backward (each tp rank keeps its shard of the MLP and attention and the whole
// residual stream and norms), the LM head's on the last stage, and one layer's backward
// workspace (Note [Peak memory] in cost_model.cpp composes them). The gradient sync is an
// all_reduce of the stage's f32 gradient shard across the replicas, within nodes first (Note
// [Hierarchical gradient sync]; summed in one flat buffer of at most kSyncBucketBytes, which
// memory counts); AdamW moves kAdamBytesPerParam per parameter at the
// device's memory bandwidth. With measured times (a profile) the compute is those: split over
// tp with the all_reduces added, or as they are when measured on one rank of a tp group of the
// stage's size (includes_tp; the caller may pass another device type's entry at that tp scaled
// to this type, lib/plan/layout_cost.cpp profile_for: a tp-1 split misses what tp cannot split). A measured optimizer step replaces AdamW's estimate (per
// parameter, or as the whole model's step of which the stage takes its share), and measured
// activation and reserved bytes replace those estimates, each term where it was measured.
// With tied embeddings split over stages, the first and last stages sum the shared matrix's
// gradient over both stages of every replica (2 x replicas members), the rest over the replicas.
double ring_all_reduce_s(double bytes, int64_t members, const Link& link) {
  if (members <= 1) return 0;
  const double p = static_cast<double>(members);
  return 2 * (p - 1) * link.transfer_s(bytes / p);
}

// Note [Hierarchical gradient sync]: replicas of a stage that share a node sum their
// gradients there first, over the node's own link (NVLink, PCIe), so only the node's 1/g share
// crosses between nodes (NCCL's rings cross each node boundary once; a hierarchical
// all-reduce does the same explicitly): with g of the m members on each of n = ceil(m / g)
// nodes, a reduce-scatter (g - 1 steps of bytes / g) and an all-gather within, and between
// them a ring all-reduce of bytes / g over the n nodes, its g flows per node (times the tp
// ranks doing the same at once: the caller's Link::shared_by) sharing the node's link. The
// cheaper of that and one ring over all m members (each step as slow as the link between
// nodes) is taken, as NCCL picks its algorithm by size: a node link little faster than the
// network gains nothing from the two phases. With g = 1 it is that ring; with every member on
// one node, a ring within it.
double hierarchical_all_reduce_s(double bytes, int64_t members, int64_t per_node, const Link& within,
                                 const Link& between) {
  const int64_t g = std::clamp<int64_t>(per_node, 1, std::max<int64_t>(members, 1));
  const double flat = ring_all_reduce_s(bytes, members, between);
  if (g == 1) return flat;
  if (g >= members) return ring_all_reduce_s(bytes, members, within);
  const int64_t nodes = (members + g - 1) / g;
  const double share = bytes / static_cast<double>(g);
  return std::min(flat, 2 * static_cast<double>(g - 1) * within.transfer_s(share) + ring_all_reduce_s(share, nodes, between));
}

// Note [Stage edges]: the activation leaving a stage is whole on each of its tp ranks, and the
// next stage needs it whole on each of its own. Priced as sent once, not once per rank (what
// Megatron's scatter-gather does, and what the measured GPU jobs show: Sailor's tp-8 RTX jobs
// take ~1/8 of the per-rank-copy price, scripts/bench/plan_real.sh): the next stage's
// k = next_stage_tp ranks each receive a 1/k slice from one of min(tp, k) senders, then
// all-gather the slices among themselves; the gradient goes back mirrored (a reduce-scatter
// among the k ranks, then the slices), so one send_s stands for both ways. The senders on a
// node share its link (Link::shared_by, set by the caller to the senders taking part at once).
// With k = 1 it is one send. hetu's own executor still sends a copy per rank (the HSPMD
// point_to_point transition); until it sends slices, CPU-rank predictions of tp > 1 edges
// are that much low.
double stage_edge_s(double hidden_bytes, int64_t tp, const DeviceRates& rates) {
  const int64_t k = std::max<int64_t>(1, rates.next_stage_tp);
  const double senders = static_cast<double>(std::min(tp, k));
  const double slice = hidden_bytes / static_cast<double>(k);
  const double gather = static_cast<double>(k - 1) * rates.next_stage_gather.transfer_s(slice);
  return rates.next_stage.transfer_s(hidden_bytes / senders) + gather;
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
    const double share = facts.layer_forward_flops_per_token > 0
                             ? facts.layer_attention_flops_per_token / facts.layer_forward_flops_per_token
                             : 0.0;
    const double split = m->includes_tp ? 1.0 : tp;
    // A measured attention time is at most the layer's (a noisy difference may say more).
    c.attention_forward_s = layers * std::min(m->layer_forward_s, m->layer_attention_forward_s > 0 ? m->layer_attention_forward_s
                                                                                                  : share * m->layer_forward_s) / split;
    c.attention_backward_s = layers * std::min(m->layer_backward_s, m->layer_attention_backward_s > 0 ? m->layer_attention_backward_s
                                                                                                     : share * m->layer_backward_s) / split;
  } else {
    c.times.forward_s = forward_flops / tp / rates.flops_per_s + tp_comm_s;
    c.times.backward_s = 2 * forward_flops / tp / rates.flops_per_s + tp_comm_s;
    c.attention_forward_s = layers * facts.layer_attention_flops_per_token * tokens / tp / rates.flops_per_s;
    c.attention_backward_s = 2 * c.attention_forward_s;
  }
  c.times.send_s = shape.last ? 0 : stage_edge_s(hidden_bytes, shape.tp, rates);
  c.param_bytes = 4 * params / tp;
  // Activations: a profile's bytes per device where it measured them, the family's count
  // (split over tp where the tensor is) where not. A measured LM head's bytes stay held at the
  // peak (head_activation_bytes 0): a profile measures what that framework's head keeps, not
  // hetu's fused one (Note [Peak memory]).
  const MeasuredMemory* m = rates.measured_memory ? &*rates.measured_memory : nullptr;
  const double layer_bytes = m != nullptr && m->layer_activation_bytes > 0
                                 ? m->layer_activation_bytes
                                 : tokens * (facts.layer_activation_bytes_per_token / tp +
                                             facts.layer_replicated_activation_bytes_per_token);
  c.activation_bytes = layers * layer_bytes;
  if (shape.first && m != nullptr) c.activation_bytes += m->first_activation_bytes;
  if (shape.last) {
    if (m != nullptr && m->last_activation_bytes > 0) {
      c.activation_bytes += m->last_activation_bytes;
    } else {
      c.head_activation_bytes = facts.head_activation_bytes_per_token * tokens + facts.head_weight_grad_bytes / tp;
      c.activation_bytes += c.head_activation_bytes;
    }
  }
  if (m != nullptr) c.reserved_bytes = m->reserved_bytes;
  c.workspace_bytes = tokens * (facts.workspace_bytes_per_token / tp + facts.replicated_workspace_bytes_per_token);
  if (shape.last && rates.measured_memory) c.workspace_bytes = std::max(c.workspace_bytes, rates.measured_memory->head_workspace_bytes);
  if (shape.replicas > 1) c.sync_buffer_bytes = std::min(c.param_bytes, kSyncBucketBytes);
  const bool split_tied = facts.head_shares_embedding && shape.first != shape.last;
  const double tied_bytes = split_tied ? 4 * facts.last_params / tp : 0.0;
  c.grad_sync_s = hierarchical_all_reduce_s(c.param_bytes - tied_bytes, shape.replicas, rates.replicas_per_node,
                                            rates.replicas_within, rates.replicas);
  if (split_tied) c.grad_sync_s += ring_all_reduce_s(tied_bytes, 2 * shape.replicas, rates.tied);
  const double model_params = static_cast<double>(facts.layers) * facts.layer_params + facts.first_params +
                              (facts.head_shares_embedding ? 0.0 : facts.last_params);
  const MeasuredTimes* mt = rates.measured ? &*rates.measured : nullptr;
  if (mt != nullptr && mt->optimizer_s > 0 && mt->optimizer_params > 0) {
    c.optimizer_s = mt->optimizer_s / mt->optimizer_params * params / tp;  // per parameter, this device's shard
  } else if (mt != nullptr && mt->optimizer_s > 0 && model_params > 0) {
    c.optimizer_s = mt->optimizer_s * params / model_params;  // the whole model's step, its share
  } else {
    c.optimizer_s = rates.memory_bytes_per_s > 0 ? kAdamBytesPerParam * params / tp / rates.memory_bytes_per_s : 0.0;
  }
  return c;
}

}  // namespace hetu::plan
