// The single-device training loop: per step, `micro_batches` forward/backward passes whose
// losses are sums over tokens divided by the step's total token count (so accumulation
// equals one big batch), global-norm clipping, AdamW with the LR schedule; validation every
// eval_every steps; a progress line every log_every steps and out_dir/metrics.jsonl; periodic
// and final checkpoints that hold everything needed to continue bit for bit.
//
//   Trainer trainer(model, loss_fn, options);
//   TrainResult r = trainer.run(train_batches, &val_batches, &store);
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "lib/nn/module.h"
#include "lib/optim/adamw.h"
#include "lib/optim/lr_schedule.h"
#include "lib/runtime/training_io.h"

namespace hetu::runtime {

struct TrainerOptions {
  int64_t steps = 1;
  int64_t micro_batches = 1;      // per optimizer step
  int64_t tokens_per_micro_batch = 0;
  optim::LrSchedule schedule;
  optim::AdamWConfig adamw;
  double grad_clip = 1.0;         // 0: no clipping
  int64_t log_every = 10;
  int64_t eval_every = 0;         // 0: never
  int64_t eval_steps = 20;
  int64_t checkpoint_every = 0;   // 0: only the final checkpoint
  std::string resume = "auto";    // auto | never | a checkpoint path
  int64_t stop_at_step = 0;       // > 0: stop after this step with a checkpoint (a planned pause
                                  // for time-limited allocations; the schedule still spans `steps`)
  std::string metrics_path;       // empty: no metrics.jsonl
  double flops_per_token = 0;     // for MFU
  double peak_flops = 0;          // device peak, FLOP/s; 0: MFU not reported
  bool progress_bar = false;      // live bar (stdout is a terminal)
  std::map<std::string, std::string> checkpoint_metadata;  // e.g. the resolved config
};

struct TrainResult {
  int64_t first_step = 0;             // 0, or where a resumed run started
  std::vector<double> losses;         // training loss of each step this run made
  std::vector<double> val_losses;     // each evaluation, in order
  std::string last_checkpoint;
};

// Σ-over-tokens loss of one micro-batch divided by `normalizer` (a scalar tensor).
using LossFn = std::function<Tensor(const Batch& batch, double normalizer)>;

class Trainer {
 public:
  Trainer(const nn::Module& model, LossFn loss, TrainerOptions options);
  // `val` and `store` may be null. Throws hetu::Error on a non-finite loss or gradient,
  // before anything of that step is saved.
  TrainResult run(BatchSource& train, BatchSource* val, CheckpointStore* store);

 private:
  double evaluate(BatchSource& val);
  Snapshot snapshot(int64_t step, const BatchSource& train) const;
  void restore(const Snapshot& snapshot, BatchSource& train);

  const nn::Module& model_;
  LossFn loss_;
  TrainerOptions options_;
  std::vector<nn::NamedParameter> params_;
  optim::AdamW optimizer_;
};

}  // namespace hetu::runtime
