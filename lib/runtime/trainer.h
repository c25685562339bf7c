// The training loop over a StepEngine (step_engine.h): per step the engine's forward and
// backward, global-norm clipping, AdamW with the LR schedule on this rank's parameters;
// validation every eval_every steps; a progress line every log_every steps and
// out_dir/metrics.jsonl; periodic and final checkpoints that hold everything needed to
// continue bit for bit; a stop request (SIGTERM/SIGUSR1, stop_request.h) on any rank ends
// the run after the current step with a checkpoint.
//
//   Trainer trainer(parallel_engine, options);       // any layout, one device included
//   TrainResult r = trainer.run(train_batches, &val_batches, &store);
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lib/nn/module.h"
#include "lib/optim/adamw.h"
#include "lib/optim/lr_schedule.h"
#include "lib/runtime/step_engine.h"
#include "lib/runtime/step_telemetry.h"
#include "lib/runtime/training_io.h"

namespace hetu::runtime {

struct TrainerOptions {
  int64_t steps = 1;
  optim::LrSchedule schedule;
  optim::AdamWConfig adamw;
  double grad_clip = 1.0;         // 0: no clipping
  int64_t log_every = 10;
  int64_t eval_every = 0;         // 0: never
  int64_t eval_steps = 20;
  int64_t checkpoint_every = 0;   // 0: only the final checkpoint
  std::string resume = "auto";    // auto | never | a checkpoint path
  std::string init_from;          // parameters for a run that resumed nothing (fresh optimizer, data)
  int64_t stop_at_step = 0;       // > 0: stop after this step with a checkpoint (a planned pause
                                  // for time-limited allocations; the schedule still spans `steps`)
  std::string metrics_path;       // empty: no metrics.jsonl
  double flops_per_token = 0;     // for MFU
  double peak_flops = 0;          // device peak, FLOP/s; 0: MFU not reported
  bool progress_bar = false;      // live bar (stdout is a terminal)
  std::map<std::string, std::string> checkpoint_metadata;  // e.g. the resolved config
  TelemetryOptions telemetry;     // per-rank timings and traces (step_telemetry.h)
};

struct TrainResult {
  int64_t first_step = 0;             // 0, or where a resumed run started
  std::vector<double> losses;         // training loss of each step this run made
  std::vector<double> val_losses;     // each evaluation, in order
  std::string last_checkpoint;
  int stop_signal = 0;                // the signal that ended the run early, or 0
};

class Trainer {
 public:
  Trainer(StepEngine& engine, TrainerOptions options);
  // `val` and `store` may be null. Throws hetu::Error on a non-finite loss or gradient,
  // before anything of that step is saved.
  TrainResult run(BatchSource& train, BatchSource* val, CheckpointStore* store);

 private:
  double evaluate(BatchSource& val);
  Snapshot snapshot(int64_t step, const BatchSource& train) const;
  void restore(const Snapshot& snapshot, BatchSource& train);

  StepEngine& engine_;
  TrainerOptions options_;
  std::vector<nn::NamedParameter> params_;
  optim::AdamW optimizer_;
};

}  // namespace hetu::runtime
