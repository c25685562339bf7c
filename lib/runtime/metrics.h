// Training metrics: the numbers of one logged step, their progress-line and JSON forms, and
// the writer of out_dir/metrics.jsonl (one JSON object per logged step, flushed each line).
#pragma once

#include <cstdio>
#include <optional>
#include <string>

namespace hetu::runtime {

struct StepMetrics {
  int64_t step = 0;         // 1-based: optimizer steps completed
  int64_t total_steps = 0;
  double loss = 0;
  double lr = 0;
  double grad_norm = 0;
  double tokens_per_s = 0;
  double mfu = 0;           // fraction of peak, 0..1
  double step_seconds = 0;
  double eta_seconds = 0;
  std::optional<double> val_loss;
  std::optional<double> peak_memory_gib;  // peak tensor memory so far: the CPU allocator or the GPU caching allocator
  std::string time_json;                  // per-rank timings (step_telemetry.h), a JSON object; "" if none
  std::optional<double> switch_seconds;   // strategy switches since the previous line: their wall time
  std::optional<double> switch_reshard_seconds;  // the part of it spent resharding the state
  std::optional<double> loss_scale;       // fp16: the loss scale the step ran at
  bool skipped = false;                   // fp16: the step overflowed and made no update
};

// "step   40/200 | loss 2.4512 | lr 1.00e-03 | norm 0.812 | 10.2k tok/s | MFU 31.2% | ETA 1m05s"
// (GPU runs add "| mem 12.3 GiB" before the ETA)
std::string progress_line(const StepMetrics& m);
// {"step":40,"loss":2.4512,...}
std::string metrics_json(const StepMetrics& m);
std::string format_duration(double seconds);

class MetricsWriter {
 public:
  // Creates folders. resumed_step 0: the file starts empty. A run resumed after step N
  // keeps the lines of steps <= N and drops the rest (steps it is about to repeat, a torn
  // last line), rewriting the file atomically, then appends; so no step has two lines.
  MetricsWriter(const std::string& path, int64_t resumed_step);
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;
  void write(const StepMetrics& m);

 private:
  std::FILE* file_ = nullptr;
};

}  // namespace hetu::runtime
