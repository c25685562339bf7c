// The training loop over a StepEngine (step_engine.h): per step the engine's forward and
// backward, global-norm clipping, AdamW with the LR schedule on this rank's parameters;
// validation every eval_every steps; a progress line every log_every steps and
// out_dir/metrics.jsonl; periodic and final checkpoints that hold everything needed to
// continue bit for bit; a stop request (SIGTERM/SIGUSR1, stop_request.h) on any rank ends
// the run after the current step with a checkpoint.
//
//   Trainer trainer(parallel_engine, options);       // any layout, one device included
//   TrainResult r = trainer.run(train_batches, &val_batches, &store);
// Strategy switches (strategy.h): Trainer(run under the first strategy, options with
// `switches`); after each switch's step the Trainer asks for the rank's run under the next
// strategy and moves parameters, AdamW moments and counters into it (switch_to). A rank the
// strategy leaves out runs an IdleEngine (idle_engine.h): no parameters, zeros into the
// step's reductions. Checkpoints record the strategy in effect ("strategy" metadata); a
// resumed run loads under the first strategy and switches at once to the one in effect
// after the checkpoint's step, and the later switches follow.
// Each switch's duration is logged and put on the next metrics.jsonl line (switch_s). With
// a StragglerWatch the Trainer asks it at every step boundary whether to switch to a
// re-planned layout (straggler.h). A store that keeps step snapshots (hetu launch;
// lib/checkpoint/recovery_store.h) gets every completed step's state right after the step is logged.
// fp16 (options.loss_scale): each step's loss is scaled, the gradients unscaled with an
// inf/nan check, and a step that overflowed on any rank is skipped on every rank: no AdamW
// update (AdamW's step count stays), the step still counts (its data is consumed, the LR
// schedule moves on) and its line is logged with `skipped`; the scale halves (loss_scaler.h).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/nn/module.h"
#include "lib/optim/adamw.h"
#include "lib/optim/loss_scaler.h"
#include "lib/optim/lr_schedule.h"
#include "lib/runtime/step_engine.h"
#include "lib/runtime/step_telemetry.h"
#include "lib/runtime/straggler.h"
#include "lib/runtime/strategy.h"
#include "lib/runtime/training_io.h"

namespace hetu::runtime {

// After step `after_step` completes (and its checkpoint, if any, is written), the run
// continues under the strategy whose run `enter` builds.
struct StrategySwitch {
  int64_t after_step = 0;
  std::string strategy;                // the name of the strategy `enter` builds
  std::function<StrategyRun()> enter;
};

struct TrainerOptions {
  int64_t steps = 1;
  optim::LrSchedule schedule;
  optim::AdamWConfig adamw;
  double grad_clip = 1.0;         // 0: no clipping
  // fp16: the dynamic loss scale (lib/optim/loss_scaler.h); none for the other precisions.
  std::optional<optim::LossScaleConfig> loss_scale;
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
  std::vector<StrategySwitch> switches;  // in step order; needs the StrategyRun constructor
  // Called before each step with its number (1-based), e.g. to change an emulated slowdown.
  std::function<void(int64_t step)> before_step;
  // Re-plans around slow ranks and switches (straggler.h); needs the StrategyRun constructor.
  std::shared_ptr<StragglerWatch> straggler;
};

struct TrainResult {
  int64_t first_step = 0;             // 0, or where a resumed run started
  std::vector<double> losses;         // training loss of each step this run made
  std::vector<int64_t> skipped_steps;  // fp16: the steps of this run skipped for inf/nan gradients
  std::vector<double> val_losses;     // each evaluation, in order
  std::string last_checkpoint;
  int stop_signal = 0;                // the signal that ended the run early, or 0
};

class Trainer {
 public:
  Trainer(StepEngine& engine, TrainerOptions options);
  // Runs under `initial` (its engine; run()'s train source and store are its own) and can switch.
  Trainer(StrategyRun initial, TrainerOptions options);
  // `val` and `store` may be null. Throws hetu::Error on a non-finite loss or gradient,
  // before anything of that step is saved.
  TrainResult run(BatchSource& train, BatchSource* val, CheckpointStore* store);
  // At a step boundary: reshards every parameter (param -> param annotation) and both AdamW
  // moments (state -> state) from the current strategy to `next`'s, in name order, with
  // `next`'s plan cache: the parameters into `next.engine`'s tensors, the moments into tensors
  // the next AdamW adopts; carries the AdamW step count and the data position (from `data`,
  // the current source, to next.train) over; then runs under `next`. The current run is
  // released first (Note [Switch memory] in trainer.cpp), so `data` is read before that. Every rank must call it; both strategies' placements list every tensor of the
  // whole model. A rank idle under either strategy holds nothing there (it sends or
  // receives its tensors, or takes no part).
  void switch_to(StrategyRun next, const BatchSource& data);

 private:
  double evaluate(BatchSource& val);
  // fp16: unscales this rank's gradients, reduces the overflow flag over every rank and
  // updates the scale; true when step `step` (1-based) must be skipped.
  bool unscale_overflowed(int64_t step);
  // Drops the gradients of this rank's parameters (and ZeRO-1 shards): after the last step
  // under a strategy, before a switch.
  void release_gradients() const;
  // Logs this rank's optimizer-state bytes: AdamW moments and the f32 tensors AdamW updates.
  void log_optimizer_state() const;
  Snapshot snapshot(int64_t step, const BatchSource& train) const;
  void restore(const Snapshot& snapshot, BatchSource& train);

  StepEngine* engine_;
  TrainerOptions options_;
  StrategyRun current_;  // strategy and comm unset for the StepEngine constructor
  std::vector<nn::NamedParameter> params_;
  optim::AdamW optimizer_;
  std::optional<optim::LossScaler> scaler_;  // fp16 only
};

}  // namespace hetu::runtime
