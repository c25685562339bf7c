// The time of one pipeline's step: its schedule (pipeline_schedule.h, GPipe or 1F1B) played
// out with known per-stage times, each stage running its action list in order and exchanging
// sends and receives in the executor's paired batches, so a sender waits for its receiver
// (see Note [Pipeline critical path]). Also the largest
// number of micro-batches whose activations a stage holds at once (what its memory must fit).
//
// Example: 1F1B, 2 stages, 2 micro-batches, forward 1 s, backward 2 s, sends free:
//   stage 0: F0 [0,1] F1 [1,2] ........ B0 [4,6] ... B1 [7,9]
//   stage 1: ...... F0 [1,2] B0 [2,4] F1 [4,5] B1 [5,7]          makespan 9 s
#pragma once

#include <cstdint>
#include <vector>

#include "lib/pipeline/pipeline_schedule.h"

namespace hetu::plan {

struct StageTimes {
  double forward_s = 0;   // one micro-batch through the stage (embedding / LM head included on the ends)
  double backward_s = 0;
  double send_s = 0;      // the activation to the next stage, and its gradient back (unused on the last)
  bool operator==(const StageTimes&) const = default;
};

struct ActionSpan {
  pipeline::PipeAction action;
  double start_s = 0;
  double end_s = 0;
};

struct PipelineTime {
  double makespan_s = 0;                     // first action's start to last action's end
  std::vector<double> busy_s;                // per stage: its compute
  std::vector<std::vector<ActionSpan>> spans;  // per stage, in schedule order
  // Per stage: the idle share of the makespan, 1 - busy / makespan.
  double bubble(int64_t stage) const;
};

// Throws hetu::UsageError on no stages, micro_batches < 1 or negative times.
PipelineTime pipeline_time(pipeline::ScheduleKind kind, int64_t micro_batches, const std::vector<StageTimes>& stages);

// The most micro-batches `stage` holds activations for at once (forwarded, not yet backwarded).
int64_t micro_batches_in_flight(pipeline::ScheduleKind kind, int64_t stages, int64_t micro_batches, int64_t stage);

}  // namespace hetu::plan
