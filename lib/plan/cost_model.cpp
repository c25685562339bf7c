// Step time and peak memory of a layout from its stage costs. See Note [Step composition].
#include "lib/plan/cost_model.h"

#include <algorithm>

#include "lib/util/error.h"

namespace hetu::plan {

double training_bytes_per_param_byte(double zero_state_share) {
  return zero_state_share > 0 ? 2 + 3 * zero_state_share : kTrainingBytesPerParamByte;
}

// Note [Step composition]: the replicas run their pipelines side by side; the gradient sync
// cannot finish before the slowest replica's last backward (a split collective needs every
// holder of a block), and each device steps its optimizer after its sync. So the step is the
// slowest pipeline, then the slowest sync, then the slowest optimizer step: an upper bound
// when a fast replica's sync or optimizer could overlap a slow replica's pipeline, exact when
// the slowest replica also has the slowest sync and optimizer (the usual case: it holds the
// most parameters per device).
// Note [Peak memory]: a device's tensors at its busiest moment. Its training state (weights,
// gradients, AdamW's m and v: kTrainingBytesPerParamByte x the weights) lives through the
// step: the gradients of a step's first micro-batch are all there before its second one's
// forward (a step of one micro-batch creates them in its backward, as the activations go,
// so there they are not yet there at the peak). The peak comes in the backward of the oldest
// micro-batch in flight, in its first layer's backward: every micro-batch in flight still
// holds its activations, except that one's LM head, whose backward has just run, and the
// layer's backward holds its workspace (its gradients in flight). After the pipeline, the
// gradient sync adds its flat buffer to the training state (the activations are gone); the
// peak is the larger of the two moments. Under ZeRO-1 the state is 2 + 3 x share weights
// (training_bytes_per_param_byte); memory held outside the tensors (a profile's
// reserved_bytes) lives through the step. Checked against the CPU allocator's peak by
// tests/e2e/plan_memory.sh and scripts/bench/plan_accuracy.sh.
double peak_bytes(const StageCost& stage, int64_t in_flight, int64_t micro_batches) {
  const double state = training_bytes_per_param_byte(stage.zero_state_share) * stage.param_bytes + stage.reserved_bytes;
  const double gradients_not_yet = micro_batches == 1 ? stage.param_bytes : 0.0;
  const double pipeline = state - gradients_not_yet + static_cast<double>(in_flight) * stage.activation_bytes -
                          stage.head_activation_bytes + stage.workspace_bytes;
  return std::max(pipeline, state + stage.sync_buffer_bytes);
}

LayoutPrediction predict_layout(const std::vector<ReplicaCost>& replicas) {
  HT_USAGE_CHECK(!replicas.empty(), "cost model: no replicas");
  LayoutPrediction p;
  for (size_t r = 0; r < replicas.size(); ++r) {
    const ReplicaCost& replica = replicas[r];
    HT_USAGE_CHECK(!replica.stages.empty(), "cost model: replica {} has no stages", r);
    HT_USAGE_CHECK(replica.micro_batches >= 1, "cost model: replica {} runs {} micro-batches", r,
                   replica.micro_batches);
    std::vector<StageTimes> times;
    for (const StageCost& stage : replica.stages) times.push_back(stage.times);
    const PipelineTime pipe = pipeline_time(replica.schedule, replica.micro_batches, times);
    p.replica_pipeline_s.push_back(pipe.makespan_s);
    p.pipeline_s = std::max(p.pipeline_s, pipe.makespan_s);
    const int64_t num_stages = static_cast<int64_t>(replica.stages.size());
    std::vector<double> peaks, bubbles;
    std::vector<int64_t> held;
    for (int64_t s = 0; s < num_stages; ++s) {
      const StageCost& stage = replica.stages[static_cast<size_t>(s)];
      const int64_t in_flight = micro_batches_in_flight(replica.schedule, num_stages, replica.micro_batches, s);
      HT_USAGE_CHECK(stage.zero_state_share >= 0 && stage.zero_state_share <= 1,
                     "cost model: replica {} stage {} keeps a ZeRO-1 state share of {}", r, s, stage.zero_state_share);
      peaks.push_back(peak_bytes(stage, in_flight, replica.micro_batches));
      bubbles.push_back(pipe.bubble(s));
      held.push_back(in_flight);
      p.grad_sync_s = std::max(p.grad_sync_s, stage.grad_sync_s);
      const double optimizer_s = stage.zero_state_share > 0 ? stage.zero_state_share * stage.optimizer_s : stage.optimizer_s;
      p.optimizer_s = std::max(p.optimizer_s, optimizer_s);
    }
    p.peak_bytes.push_back(std::move(peaks));
    p.bubble.push_back(std::move(bubbles));
    p.in_flight.push_back(std::move(held));
  }
  p.step_s = p.pipeline_s + p.grad_sync_s + p.optimizer_s;
  return p;
}

}  // namespace hetu::plan
