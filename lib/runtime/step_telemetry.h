// StepTelemetry: what the Trainer reports about where each rank's time goes. At every logged
// step it takes this rank's phase totals from the step timer (lib/util/step_timer.h), shares
// them with every rank in one small all_reduce, and returns the summary that metrics.jsonl
// carries under "time" (per phase: min, max, mean over ranks and the slowest rank; per-rank
// values up to kMaxRanksListed ranks, and each rank's peak tensor memory when the caller gives
// it: by_rank.peak_mem_gib); each rank logs its own line. Steps inside
// training.trace are traced: out_dir/trace/rank-N.json per rank and trace.json, all ranks
// merged (Chrome trace-event format; one process per rank, tid 0 compute, tid 1 communication).
//
//   StepTelemetry telemetry(options.telemetry);
//   while (...) { auto in_step = telemetry.step(step + 1, last); ...;
//                 if (log_now) m.time_json = telemetry.collect(window_steps); }
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/hspmd/communicator.h"
#include "lib/util/step_timer.h"

namespace hetu::runtime {

constexpr int64_t kMaxRanksListed = 64;

struct TelemetryOptions {
  Communicator* comm = nullptr;  // host communicator for the one all_reduce; null: a single rank
  std::string out_dir;           // traces under out_dir/trace; empty: no trace files
  int64_t trace_first = 0;       // 1-based, inclusive; 0: no trace
  int64_t trace_last = -1;
  std::string rank_label;        // the trace's process name, e.g. "rank 1 (replica 0, stage 1, tp 0)"
};

// The summary across ranks of one logged window, per step.
struct TimingSummary {
  struct Stat {
    double min = 0, max = 0, mean = 0;
    int64_t slowest = 0;  // the rank with the max
  };
  int64_t ranks = 1;
  Stat step;                                  // wall seconds per step
  Stat compute;                               // forward + backward
  std::vector<Stat> phases;                   // kNumPhases, in timing::Phase order
  std::vector<std::vector<double>> by_rank;   // [rank][0: step, 1..: phases]
  std::vector<double> peak_mem_gib;           // [rank], when collected (else empty)
};

// values[r * kFields + f], f = 0 step seconds, 1.. the phases: the summary over ranks.
TimingSummary summarize_timings(const std::vector<double>& values, int64_t ranks);
std::string timing_json(const TimingSummary& summary);
// "time/step 0.412s | forward 0.120 (29%) | ..." for one rank's values.
std::string timing_line(const std::vector<double>& rank_values);

class StepTelemetry {
 public:
  static constexpr int64_t kFields = 1 + timing::kNumPhases;

  explicit StepTelemetry(TelemetryOptions options);

  // Marks step `number` (1-based) while it lives; traced steps' events are written when the
  // trace range (or the run, at `last`) ends.
  class Step {
   public:
    Step(StepTelemetry& owner, int64_t number, int64_t last);
    ~Step();
    Step(const Step&) = delete;
    Step& operator=(const Step&) = delete;

   private:
    StepTelemetry& owner_;
    int64_t number_, last_;
  };
  [[nodiscard]] Step step(int64_t number, int64_t last) { return Step(*this, number, last); }

  // The window since the previous call (`steps` steps), reduced over ranks: the "time" JSON
  // object. Every rank must call it at the same steps. `peak_mem_gib` >= 0: this rank's peak
  // tensor memory, listed per rank (what the planner's memory prediction is checked against).
  std::string collect(int64_t steps, double peak_mem_gib = -1);

 private:
  void write_trace();
  TelemetryOptions options_;
  int64_t rank_ = 0;
  int64_t world_ = 1;
  bool trace_written_ = false;
};

}  // namespace hetu::runtime
