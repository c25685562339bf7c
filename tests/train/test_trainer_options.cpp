// The Trainer's options from a job file (lib/train/trainer_options.h) against the values the
// test writes into the job: the LR schedule, AdamW, clipping, logging, evaluation and
// checkpoints; metrics.jsonl on the reporting rank only; the resolved config stored with
// every checkpoint.
#include <catch2/catch.hpp>

#include "lib/config/config.h"
#include "lib/train/trainer_options.h"
#include "lib/util/build_info.h"

using namespace hetu;

TEST_CASE("trainer options: every training, optimizer, lr_schedule and checkpoint value", "[trainer_options]") {
  const config::LoadedConfig loaded = config::load_job_config_text(
      default_job_toml(), "job.toml",
      {"training.steps=40", "optimizer.lr=0.003", "optimizer.betas=[0.8, 0.95]", "optimizer.eps=1e-7",
       "optimizer.weight_decay=0.05", "lr_schedule.warmup_steps=5", "lr_schedule.decay=\"linear\"",
       "lr_schedule.min_lr_ratio=0.2", "training.grad_clip=0.5", "training.log_every=3", "checkpoint.every=10",
       "checkpoint.resume=\"never\"", "job.out_dir=\"runs/options\""});
  const config::JobConfig& c = loaded.config;
  const runtime::TrainerOptions o = train::trainer_options(c, /*stop_at_step=*/12, /*reporting_rank=*/true);
  CHECK(o.steps == 40);
  CHECK(o.schedule.peak == 0.003);
  CHECK(o.schedule.warmup_steps == 5);
  CHECK(o.schedule.total_steps == 40);
  CHECK(o.schedule.decay == optim::LrDecayKind::linear);
  CHECK(o.schedule.min_lr_ratio == 0.2);
  CHECK(o.adamw.beta1 == 0.8);
  CHECK(o.adamw.beta2 == 0.95);
  CHECK(o.adamw.eps == 1e-7);
  CHECK(o.adamw.weight_decay == 0.05);
  CHECK(o.grad_clip == 0.5);
  CHECK(o.log_every == 3);
  CHECK(o.checkpoint_every == 10);
  CHECK(o.resume == "never");
  CHECK(o.init_from.empty());
  CHECK(o.stop_at_step == 12);
  CHECK(o.metrics_path == "runs/options/metrics.jsonl");
  CHECK(o.checkpoint_metadata.at("config") == config::to_toml(c));
  CHECK(o.checkpoint_metadata.at("arch") == "gpt2");
  CHECK(o.telemetry.out_dir == "runs/options");

  const runtime::TrainerOptions other = train::trainer_options(c, 0, /*reporting_rank=*/false);
  CHECK(other.metrics_path.empty());
  CHECK_FALSE(other.progress_bar);
  CHECK(other.stop_at_step == 0);
}
