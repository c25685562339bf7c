// trainer_options (trainer_options.h): the job file's [training], [optimizer], [lr_schedule]
// and [checkpoint] tables as the Trainer's options.
#include "lib/train/trainer_options.h"

#include <unistd.h>

#include <string>
#include <tuple>

#include "lib/config/config.h"
#include "lib/util/step_timer.h"
#include "lib/weights/model_weights.h"

namespace hetu::train {
namespace {

optim::LrDecayKind decay_kind(config::LrDecay decay) {
  switch (decay) {
    case config::LrDecay::constant: return optim::LrDecayKind::constant;
    case config::LrDecay::linear: return optim::LrDecayKind::linear;
    case config::LrDecay::cosine: return optim::LrDecayKind::cosine;
  }
  return optim::LrDecayKind::cosine;
}

}  // namespace

runtime::TrainerOptions trainer_options(const config::JobConfig& c, int64_t stop_at_step, bool reporting_rank) {
  runtime::TrainerOptions o;
  o.steps = c.training.steps;
  o.schedule = {c.optimizer.lr, c.lr_schedule.warmup_steps, c.training.steps, decay_kind(c.lr_schedule.decay),
                c.lr_schedule.min_lr_ratio};
  o.adamw = {c.optimizer.beta1, c.optimizer.beta2, c.optimizer.eps, c.optimizer.weight_decay};
  o.grad_clip = c.training.grad_clip;
  if (c.training.precision == config::Precision::fp16) {
    o.loss_scale = optim::LossScaleConfig{c.training.loss_scale_init, c.training.loss_scale_window};
  }
  o.log_every = c.training.log_every;
  o.eval_every = c.training.eval_every;
  o.eval_steps = c.training.eval_steps;
  o.checkpoint_every = c.checkpoint.every;
  o.resume = c.checkpoint.resume;
  if (!c.checkpoint.init_from.empty()) o.init_from = weights::resolve_hetu_checkpoint(c.checkpoint.init_from);
  o.stop_at_step = stop_at_step;
  if (reporting_rank) o.metrics_path = c.job.out_dir + "/metrics.jsonl";
  o.progress_bar = reporting_rank && ::isatty(STDOUT_FILENO) != 0;
  o.checkpoint_metadata = {{"config", config::to_toml(c)}, {"arch", std::string(to_string(c.model.arch))}};
  o.telemetry.out_dir = c.job.out_dir;
  std::tie(o.telemetry.trace_first, o.telemetry.trace_last) =
      timing::parse_step_range(c.training.trace, "training.trace");
  return o;
}

}  // namespace hetu::train
