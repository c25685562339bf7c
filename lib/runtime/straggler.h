// Straggler re-planning (`[straggler]`, docs/config.md): at every step boundary each rank's
// compute time of the step is shared with every rank (one all_reduce), compared with what the
// cost model predicts for that rank, and when a rank stays out of line for `window` steps
// the layout is re-planned with the measured speeds; the run switches to the new layout when
// its predicted gain is at least `min_gain`. Every rank feeds identical numbers to the same
// pure functions, so every rank takes the same decision. See Note [Straggler decisions].
//
//   StragglerWatch watch(options, &host_comm, compute_clock, std::move(planner));
//   watch.step_begins(); ...forward, backward, optimizer...; watch.step_computed();
//   if (auto enter = watch.after_step(step, /*sample=*/true)) trainer.switch_to(enter(), data);
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/hspmd/communicator.h"
#include "lib/runtime/strategy.h"

namespace hetu::runtime {

struct StragglerOptions {
  double threshold = 1.2;   // a rank is out of line at >= threshold x (or <= 1/threshold x) its expected compute
  int64_t window = 5;       // for this many consecutive steps
  double min_gain = 0.10;   // switch when the re-plan's step is predicted this much faster (tokens/s)
};

// What a run of out-of-line steps found: per rank the factor its compute is off its
// expected time (the median over the window; 1 for ranks that stayed in line or are idle).
struct StragglerFinding {
  std::vector<double> factor;       // per rank
  std::vector<int64_t> ranks;       // the out-of-line ranks, ascending
  std::vector<double> measured_s;   // per rank, the window's median compute per step
  std::vector<double> expected_s;   // per rank, the expectation it was compared with (at the cluster's pace)
};

// The detection, as a pure function of the samples it is given. A sample is every rank's
// measured compute of one step and its expected compute (0: an idle rank, ignored).
class StragglerDetector {
 public:
  explicit StragglerDetector(StragglerOptions options);
  // A finding when some rank's last `window` samples were all out of line in one direction.
  std::optional<StragglerFinding> observe(const std::vector<double>& measured, const std::vector<double>& expected);
  // Forgets every sample (after a re-plan: the expectations changed).
  void reset();

 private:
  StragglerOptions options_;
  std::vector<std::deque<double>> ratios_;   // per rank, its last `window` normalised ratios
  std::vector<std::deque<double>> measured_; // per rank, the same steps' measured compute
  std::vector<std::deque<double>> expected_; // and expectations (at the cluster's pace)
};

// The cost model's side, implemented above lib (lib/plan/straggler_plan.h).
class StragglerPlanner {
 public:
  virtual ~StragglerPlanner() = default;
  // Per rank, its predicted compute seconds per step under the current layout when rank r's
  // device computes slowdown[r] times slower than its profile says (0: idle under it).
  virtual std::vector<double> expected_compute(const std::vector<double>& slowdown) = 0;
  struct Plan {
    double current_step_s = 0;   // the current layout, priced at the slowdowns
    double planned_step_s = 0;   // the best layout found at the slowdowns
    bool changes_layout = false;
    std::string summary;         // the planned layout, one line
    std::function<StrategyRun()> enter;  // builds this rank's run under it
  };
  virtual Plan replan(const std::vector<double>& slowdown) = 0;
  // The run switches to `plan`: it becomes the current layout.
  virtual void adopt(const Plan& plan) = 0;
};

// The predicted gain of switching: tokens/s under the plan over tokens/s now, minus 1.
double predicted_gain(const StragglerPlanner::Plan& plan);

class StragglerWatch {
 public:
  // `comm`: the host communicator over every rank (the timings' all_reduce). `compute_clock`:
  // this rank's compute seconds so far, monotonic.
  StragglerWatch(StragglerOptions options, Communicator* comm, std::function<double()> compute_clock,
                 std::unique_ptr<StragglerPlanner> planner);
  // A step's compute is the compute clock's advance between these two (its forward, backward
  // and optimizer step; not the logging, evaluation or checkpoint after it).
  void step_begins() { begin_clock_ = compute_clock_(); }
  void step_computed() { step_compute_s_ = compute_clock_() - begin_clock_; }
  // At the boundary after step `step` (every rank calls it at every step): unless `sample` is
  // false (the run's first step, or the first after a switch), shares the step's compute with
  // every rank and decides. Returns the builder of the run to switch to when a re-plan is
  // worth it.
  std::function<StrategyRun()> after_step(int64_t step, bool sample);
  // Per rank, the slowdown the expectations assume now.
  const std::vector<double>& slowdown() const { return slowdown_; }

 private:
  StragglerOptions options_;
  Communicator* comm_;
  std::function<double()> compute_clock_;
  std::unique_ptr<StragglerPlanner> planner_;
  StragglerDetector detector_;
  std::vector<double> slowdown_;   // per rank
  std::vector<double> expected_;   // per rank, at slowdown_ under the current layout
  double begin_clock_ = 0;
  double step_compute_s_ = 0;
  int64_t replans_ = 0;
};

}  // namespace hetu::runtime
