// Stage costs estimated from a model's facts and a device's rates, for device types the
// planner has no profile of (see Note [Catalogue estimates]): compute at a stated share of
// the catalogue's peak, AdamW at its memory bandwidth, messages at a link's bandwidth and
// latency. The result feeds predict_layout (cost_model.h).
//
//   StageCost c = estimate_stage(facts, {0, 13, true, false, 4, 1, 4096, 2}, rates);
//   // layers 0-13 with the embedding, tp 4, micro-batch 1 x 4096 tokens, 2 replicas to sync
#pragma once

#include <cstdint>
#include <optional>

#include "lib/plan/cost_model.h"
#include "lib/plan/link.h"

namespace hetu::plan {

// What a model family says about its cost (lib/plan/model_facts.h fills it from the model).
struct ModelFacts {
  int64_t layers = 0;
  double layer_params = 0;                    // one transformer layer
  double first_params = 0;                    // embeddings, on the first stage
  double last_params = 0;                     // the LM head, on the last stage
  bool head_shares_embedding = false;         // tied: one stage that is first and last holds it once
  double layer_forward_flops_per_token = 0;   // at the job's sequence length
  double layer_attention_flops_per_token = 0; // the part of that growing with the length (0: not split)
  double head_forward_flops_per_token = 0;    // the LM head, on the last stage
  // Kept for the backward, per layer: split over tp, and whole on every tp rank.
  double layer_activation_bytes_per_token = 0;
  double layer_replicated_activation_bytes_per_token = 0;
  // The most one layer's backward holds beyond that: split over tp, and whole.
  double workspace_bytes_per_token = 0;
  double replicated_workspace_bytes_per_token = 0;
  // Kept by the last stage per micro-batch: the final norm's input and statistics and the fused
  // LM head's hidden gradient (per token, whole on every tp rank), and its weight gradient
  // (the head's padded vocabulary x hidden, split over tp).
  double head_activation_bytes_per_token = 0;
  double head_weight_grad_bytes = 0;
  double hidden_bytes_per_token = 0;          // the activation crossing a stage edge
  int64_t tp_all_reduces_per_layer = 2;       // forward (the same count again in the backward)
};

// Measured compute of one micro-batch of the stage's size (a profile): on one device, or,
// with includes_tp, on one device of a tp group of the stage's tp, its tp collectives included.
struct MeasuredTimes {
  double layer_forward_s = 0, layer_backward_s = 0;   // one layer
  double first_forward_s = 0, first_backward_s = 0;   // the embeddings
  double last_forward_s = 0, last_backward_s = 0;     // the LM head and the loss
  // true: the times of one rank of a tp group of the stage's size, its collectives included
  // (used as they are); false: of one device alone (split over tp, collectives added).
  bool includes_tp = false;
  // The optimizer step over optimizer_params parameters, or with optimizer_params 0 over the
  // whole model (its tp shard); optimizer_s 0: not measured.
  double optimizer_s = 0;
  double optimizer_params = 0;
  // The part of one layer's forward / backward that grows with the square of the length
  // (attention), measured; 0: split by ModelFacts' FLOP share (layer_attention_flops_per_token).
  double layer_attention_forward_s = 0, layer_attention_backward_s = 0;
};

// Measured memory of one device of the stage's tp group (a profile), per micro-batch.
struct MeasuredMemory {
  double layer_activation_bytes = 0;   // kept for the backward by one layer
  double first_activation_bytes = 0;   // by the embeddings
  double last_activation_bytes = 0;    // by the final norm, LM head and loss
  double reserved_bytes = 0;           // held outside the model's tensors (runtime, kernels, buffers)
  double head_workspace_bytes = 0;     // the LM head's backward beyond that (0: the estimate's)
};

// One device type's rates as the estimate uses them.
struct DeviceRates {
  double flops_per_s = 0;          // sustained: peak x efficiency (/ emulate_slowdown)
  double memory_bytes_per_s = 0;   // for the optimizer step
  Link tp;                         // between the stage's tp ranks
  Link next_stage;                 // to the next stage's devices (shared by the stage's senders on a node)
  // A stage edge under tp (Note [Stage edges]): the next stage's tp, its slices' count, and the
  // link among its devices that all-gathers them.
  int64_t next_stage_tp = 1;
  Link next_stage_gather;
  // The gradient sync among the replicas holding the same parameters (Note [Hierarchical
  // gradient sync]): `replicas` between their nodes (shared by the node's devices taking part),
  // and, where replicas_per_node of them share a node, replicas_within inside it.
  Link replicas;
  int64_t replicas_per_node = 1;
  Link replicas_within;
  Link tied;                       // among every replica's first and last stages (a tied embedding split over them)
  std::optional<MeasuredTimes> measured;  // when set, replaces the FLOP-based compute (split over tp)
  std::optional<MeasuredMemory> measured_memory;  // when set, replaces the estimated activations
};

struct StageShape {
  int64_t first_layer = 0;
  int64_t last_layer = 0;
  bool first = false;              // holds the embeddings
  bool last = false;               // holds the LM head and the loss
  int64_t tp = 1;
  int64_t micro_batch = 1;         // sequences
  int64_t seq_len = 1;
  int64_t replicas = 1;            // replicas its gradients are summed across
};

// Bytes AdamW moves per parameter: reads weight, gradient, m, v; writes weight, m, v (f32).
inline constexpr double kAdamBytesPerParam = 7 * 4;

// The gradient sync's bucket: 32 Mi f32 elements (kBucketElements, lib/runtime/parallel_engine.cpp).
inline constexpr double kSyncBucketBytes = double(int64_t{1} << 25) * 4;

StageCost estimate_stage(const ModelFacts& facts, const StageShape& shape, const DeviceRates& rates);

// A ring all_reduce of `bytes` over `members` on `link`: 2(p-1) steps of bytes/p.
double ring_all_reduce_s(double bytes, int64_t members, const Link& link);

// The sync of `bytes` over `members` replicas, per_node of them to a node (Note
// [Hierarchical gradient sync]): reduce-scatter within each node, all-reduce of the 1/per_node
// shares between the nodes, all-gather within, or one ring on `between` where that is cheaper;
// per_node 1 is that ring, every member on one node a ring on `within`.
double hierarchical_all_reduce_s(double bytes, int64_t members, int64_t per_node, const Link& within,
                                 const Link& between);

// The activation of `hidden_bytes` from a stage of `tp` ranks to the next one (Note [Stage edges]).
double stage_edge_s(double hidden_bytes, int64_t tp, const DeviceRates& rates);

}  // namespace hetu::plan
