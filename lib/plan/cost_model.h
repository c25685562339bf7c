// The cost of a layout: predicted step time and peak memory per device, from the cost of each
// stage of each replica (per device of its tp group, per micro-batch). Where the stage costs
// come from (a profile, or the catalogue's peaks) is the caller's business; this file composes
// them the way a training step runs (see Note [Step composition]):
//   step = max over replicas of the pipeline's critical path (pipeline_time.h)
//        + the slowest gradient sync across replicas + the slowest optimizer step;
//   peak memory of a device = parameters + gradients (as big) + AdamW's two moments (twice as
//        big) + activations of the micro-batches it holds at once (GPipe: all of them; 1F1B:
//        up to its stage depth) + workspace + the runtime's reserved memory (see
//        Note [Peak memory]). Under ZeRO-1 the
//        moments and the f32 master weights (a third copy) are the device's share of the stage's
//        (zero_state_share), and so is AdamW's time.
//
//   LayoutPrediction p = predict_layout({{one_f_one_b, 4, {stage0, stage1}}});
//   p.step_s; p.peak_bytes[0][1];   // replica 0, stage 1, per device
#pragma once

#include <cstdint>
#include <vector>

#include "lib/plan/pipeline_time.h"

namespace hetu::plan {

struct StageCost {
  StageTimes times;              // per micro-batch
  double param_bytes = 0;        // the f32 parameters one device of the stage holds (its tp shard)
  double activation_bytes = 0;   // what one micro-batch leaves for the backward, per device
  double workspace_bytes = 0;    // what one layer's backward holds beyond the kept activations
  double grad_sync_s = 0;        // its gradients summed across the replicas (0 with one replica)
  double optimizer_s = 0;        // AdamW over its shard
  double reserved_bytes = 0;     // held outside the model's tensors (runtime, kernels, buffers), per device
  // ZeRO-1: the part of its parameters' AdamW moments and f32 master weights one device keeps
  // (its tp over every device that holds those layers, all replicas together); 0: no ZeRO
  // (the moments kept whole, the parameters being the master weights).
  double zero_state_share = 0;
  double head_activation_bytes = 0;  // the part of activation_bytes the LM head keeps (last stage)
  double sync_buffer_bytes = 0;      // the gradient sync's flat buffer (0 with one replica)
  // The part of times.forward_s / backward_s that grows with the square of a sequence's length
  // (attention's scores and weighted sum), at the micro-batch's sequences; the rest grows with
  // its tokens. 0: not split (all of it per token). document_cost.h prices documents with it.
  double attention_forward_s = 0, attention_backward_s = 0;
  bool operator==(const StageCost&) const = default;
};

struct ReplicaCost {
  pipeline::ScheduleKind schedule = pipeline::ScheduleKind::one_f_one_b;
  int64_t micro_batches = 1;
  std::vector<StageCost> stages;
};

struct LayoutPrediction {
  double step_s = 0;
  double pipeline_s = 0;                        // the slowest replica's pipeline
  double grad_sync_s = 0;
  double optimizer_s = 0;
  std::vector<double> replica_pipeline_s;       // per replica
  std::vector<std::vector<double>> peak_bytes;  // [replica][stage], per device
  std::vector<std::vector<double>> bubble;      // [replica][stage], idle share of the replica's pipeline
  std::vector<std::vector<int64_t>> in_flight;  // [replica][stage], micro-batches held at once
};

// Bytes per parameter a device holds for training with AdamW: f32 weight, gradient, m and v.
inline constexpr double kTrainingBytesPerParamByte = 4;
// Per parameter byte a device holds under ZeRO-1 with a state share s: the f32 weight and
// gradient whole, m, v and the f32 master weight at s (2 + 3s; without ZeRO, s = 0: 4).
double training_bytes_per_param_byte(double zero_state_share);

// A device's peak memory holding `in_flight` of the step's `micro_batches` at once. See Note
// [Peak memory].
double peak_bytes(const StageCost& stage, int64_t in_flight, int64_t micro_batches);

// Throws hetu::UsageError on no replicas, a replica without stages or micro_batches < 1.
LayoutPrediction predict_layout(const std::vector<ReplicaCost>& replicas);

}  // namespace hetu::plan
