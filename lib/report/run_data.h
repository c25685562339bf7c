// What `hetu report` reads from a run folder: metrics.jsonl (one point per logged step; a
// resumed run's repeated steps keep their last line), the per-rank timings under "time",
// trace/trace.json (Chrome trace events), the job name from config.resolved.toml, and the
// planner's predictions when present (Note [Prediction hook]).
//
//   RunData run = load_run("runs/gpt2-tiny-cpu");   // throws hetu::UsageError naming the file
//   run.metrics.back().loss;  run.times->by_rank[1][0];  run.trace.size();
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hetu::report {

struct MetricPoint {
  int64_t step = 0;
  double loss = 0, lr = 0, grad_norm = 0, tokens_per_s = 0, mfu = 0, step_s = 0;
  double tokens = 0;                       // tokens trained after this step
  std::optional<double> val_loss;
  std::optional<double> predicted_step_s;  // Note [Prediction hook]
};

// The per-rank phase seconds of the last logged step that has them (metrics "time.by_rank").
struct RankTimes {
  int64_t step = 0;
  std::vector<std::string> phases;               // phase names (step_timer.h order)
  std::vector<std::vector<double>> seconds;      // [rank][phase]
  std::vector<double> step_s;                    // [rank]
  std::vector<double> predicted_step_s;          // [rank], empty unless predicted
};

struct TraceSpan {
  int64_t pid = 0, tid = 0, step = 0;
  std::string name;
  double ts_us = 0, dur_us = 0;
};

struct RunData {
  std::string dir, name;
  std::vector<MetricPoint> metrics;   // by step
  std::vector<int64_t> resumed_after; // steps a later segment of metrics.jsonl continued from
  std::optional<RankTimes> times;
  std::vector<TraceSpan> trace;       // complete events of trace/trace.json
  std::vector<std::string> rank_labels;  // trace process names, by pid
  std::optional<double> predicted_step_s;  // from config.resolved.toml
};

RunData load_run(const std::string& dir);

}  // namespace hetu::report
