// The training loop. See Note [Loss normalisation]: every micro-batch's loss is a token sum
// divided by the token count of the whole step, so gradients add up to those of the mean
// over the step's batch, however it is cut into micro-batches.
#include "lib/runtime/trainer.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "lib/autograd/functions.h"
#include "lib/core/cuda_runtime.h"
#include "lib/runtime/metrics.h"
#include "lib/runtime/mfu.h"
#include "lib/runtime/stop_request.h"
#include "lib/util/step_timer.h"

namespace hetu::runtime {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kOptimizerStepKey = "optimizer_steps";

void draw_bar(int64_t step, int64_t total, double loss) {
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * step / std::max<int64_t>(total, 1));
  std::fprintf(stdout, "\r[%.*s%*s] %lld/%lld loss %.4f", filled, "##############################", kWidth - filled, "",
               static_cast<long long>(step), static_cast<long long>(total), loss);
  std::fflush(stdout);
}

}  // namespace

Trainer::Trainer(StepEngine& engine, TrainerOptions options)
    : engine_(engine), options_(std::move(options)), params_(engine_.parameters()), optimizer_(params_, options_.adamw) {
  HT_CHECK(options_.steps >= 1, "trainer: steps must be >= 1");
}

Snapshot Trainer::snapshot(int64_t step, const BatchSource& train) const {
  Snapshot s;
  s.step = step;
  // Checkpoint stores read host memory: GPU tensors are copied back (CPU ones are shared).
  for (const nn::NamedParameter& p : params_) s.tensors[p.name] = p.tensor.to(Device::cpu());
  for (const nn::NamedParameter& p : optimizer_.state()) s.tensors[p.name] = p.tensor.to(Device::cpu());
  s.metadata = options_.checkpoint_metadata;
  s.metadata[kDataPositionKey] = train.save_position();
  s.metadata[kOptimizerStepKey] = std::to_string(optimizer_.steps_taken());
  return s;
}

void Trainer::restore(const Snapshot& s, BatchSource& train) {
  std::vector<nn::NamedParameter> targets = params_;
  for (const nn::NamedParameter& p : optimizer_.state()) targets.push_back(p);
  for (const nn::NamedParameter& target : targets) {
    auto it = s.tensors.find(target.name);
    HT_CHECK(it != s.tensors.end(), "resume: the checkpoint has no tensor {}", target.name);
    HT_CHECK(it->second.shape() == target.tensor.shape(), "resume: tensor {} has shape {} in the checkpoint, {} in the model",
             target.name, shape_str(it->second.shape()), shape_str(target.tensor.shape()));
    target.tensor.copy_from(it->second);
  }
  auto position = s.metadata.find(kDataPositionKey);
  HT_CHECK(position != s.metadata.end(), "resume: the checkpoint has no data position");
  train.restore_position(position->second);
  auto steps = s.metadata.find(kOptimizerStepKey);
  optimizer_.set_steps_taken(steps != s.metadata.end() ? std::stoll(steps->second) : s.step);
}

double Trainer::evaluate(BatchSource& val) {
  timing::Scope scope(timing::Phase::eval, "eval");
  const std::string start = val.save_position();  // every evaluation reads the same batches
  const double loss = engine_.evaluate(val, options_.eval_steps);
  val.restore_position(start);
  return loss;
}

TrainResult Trainer::run(BatchSource& train, BatchSource* val, CheckpointStore* store) {
  TrainResult result;
  int64_t step = 0;
  if (store != nullptr && options_.resume != "never") {
    std::optional<Snapshot> snap = options_.resume == "auto" ? store->load_latest() : store->load(options_.resume);
    if (snap) {
      restore(*snap, train);
      step = snap->step;
      spdlog::info("resumed from step {} ({})", step, options_.resume == "auto" ? "latest checkpoint" : options_.resume);
    }
  }
  if (step == 0 && store != nullptr && !options_.init_from.empty()) {
    const std::map<std::string, Tensor> loaded = store->load_parameters(options_.init_from);
    for (const nn::NamedParameter& p : params_) {
      auto it = loaded.find(p.name);
      HT_CHECK(it != loaded.end(), "init_from: {} has no parameter {}", options_.init_from, p.name);
      HT_CHECK(it->second.shape() == p.tensor.shape(), "init_from: parameter {} has shape {} in {}, {} in the model",
               p.name, shape_str(it->second.shape()), options_.init_from, shape_str(p.tensor.shape()));
      p.tensor.copy_from(it->second);
    }
    spdlog::info("initialised {} parameters from {}", params_.size(), options_.init_from);
  }
  result.first_step = step;
  std::unique_ptr<MetricsWriter> metrics;
  // A resumed run continues metrics.jsonl (without the steps it repeats); a fresh one
  // replaces an old run's file.
  if (!options_.metrics_path.empty()) metrics = std::make_unique<MetricsWriter>(options_.metrics_path, step);

  const double step_tokens = engine_.tokens_per_step();
  auto window_start = Clock::now();
  int64_t window_steps = 0;
  const auto run_start = Clock::now();
  const int64_t run_first = step;
  const int64_t last = options_.stop_at_step > 0 ? std::min(options_.stop_at_step, options_.steps) : options_.steps;
  StepTelemetry telemetry(options_.telemetry);
  while (step < last) {
    const StepTelemetry::Step in_step = telemetry.step(step + 1, last);
    const double lr = options_.schedule.at(step);
    const double loss_sum = engine_.forward_backward(train);  // See Note [Loss normalisation]
    timing::Scope optimizer_scope(timing::Phase::optimizer, "optimizer");
    const double norm = engine_.grad_norm();
    // Clipping is folded into the update (AdamW::step's grad_scale): no pass of its own.
    const double clip = options_.grad_clip > 0 && norm > options_.grad_clip ? options_.grad_clip / (norm + 1e-6) : 1.0;
    if (!std::isfinite(loss_sum) || !std::isfinite(norm)) {
      HT_THROW("step {}: the loss is {} and the gradient norm {}; stopping before the optimizer step (the last good "
               "checkpoint is untouched; lower training.lr or check the data)", step + 1, loss_sum, norm);
    }
    optimizer_.step(lr, clip);
    optimizer_scope.end();
    ++step;
    ++window_steps;
    result.losses.push_back(loss_sum);
    if (options_.progress_bar) draw_bar(step, options_.steps, loss_sum);

    const bool evaluate_now = val != nullptr && options_.eval_every > 0 && step % options_.eval_every == 0;
    const bool log_now = step % options_.log_every == 0 || step == last || evaluate_now;
    StepMetrics m;
    if (evaluate_now) {
      m.val_loss = evaluate(*val);
      result.val_losses.push_back(*m.val_loss);
    }
    if (log_now) {
      const double window_s = std::chrono::duration<double>(Clock::now() - window_start).count();
      const double run_s = std::chrono::duration<double>(Clock::now() - run_start).count();
      m.step = step;
      m.total_steps = options_.steps;
      m.loss = loss_sum;
      m.lr = lr;
      m.grad_norm = norm;
      m.step_seconds = window_s / static_cast<double>(window_steps);
      m.tokens_per_s = step_tokens / m.step_seconds;
      m.mfu = shown_mfu(options_.peak_flops > 0 ? m.tokens_per_s * options_.flops_per_token / options_.peak_flops : 0);
      m.eta_seconds = run_s / static_cast<double>(step - run_first) * static_cast<double>(options_.steps - step);
      const Device device = params_.empty() ? Device::cpu() : params_.front().tensor.device();
      if (device.is_cpu()) m.peak_memory_gib = static_cast<double>(cpu_memory_usage().peak) / (1 << 30);
      if constexpr (cuda::kBuilt) {
        if (device.is_cuda()) m.peak_memory_gib = static_cast<double>(cuda::memory_stats(device.index).peak_allocated) / (1 << 30);
      }
      m.time_json = telemetry.collect(window_steps);
      if (options_.progress_bar) std::fputs("\n", stdout);
      spdlog::info("{}", progress_line(m));
      if (metrics) metrics->write(m);
      window_start = Clock::now();
      window_steps = 0;
    }
    const bool stop = engine_.any_rank(stop_requested());
    const bool periodic = options_.checkpoint_every > 0 && step % options_.checkpoint_every == 0;
    if (store != nullptr && (periodic || step == last || stop)) {
      timing::Scope checkpoint_scope(timing::Phase::checkpoint, "checkpoint");
      result.last_checkpoint = store->save(snapshot(step, train));
      spdlog::info("checkpoint: {}", result.last_checkpoint);
      window_start = Clock::now();  // do not count the save in the next throughput
    }
    if (stop) {
      result.stop_signal = stop_signal();
      spdlog::info("stopping on {} after step {}{}", stop_signal_name(result.stop_signal), step,
                   result.last_checkpoint.empty() ? "" : " (checkpoint " + result.last_checkpoint + ")");
      break;
    }
  }
  return result;
}

}  // namespace hetu::runtime
