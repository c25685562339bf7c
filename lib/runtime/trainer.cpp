// The training loop. See Note [Loss normalisation]: every micro-batch's loss is a token sum
// divided by the token count of the whole step, so gradients add up to those of the mean
// over the step's batch, however it is cut into micro-batches.
#include "lib/runtime/trainer.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <utility>

#include "lib/autograd/functions.h"
#include "lib/hspmd/reshard.h"
#include "lib/optim/trained_tensors.h"
#include "lib/core/cuda_runtime.h"
#include "lib/runtime/metrics.h"
#include "lib/runtime/mfu.h"
#include "lib/runtime/stop_request.h"
#include "lib/util/step_timer.h"

namespace hetu::runtime {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

constexpr const char* kOptimizerStepKey = "optimizer_steps";
constexpr const char* kStrategyKey = "strategy";  // the strategy in effect when the checkpoint was written

void draw_bar(int64_t step, int64_t total, double loss) {
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * step / std::max<int64_t>(total, 1));
  std::fprintf(stdout, "\r[%.*s%*s] %lld/%lld loss %.4f", filled, "##############################", kWidth - filled, "",
               static_cast<long long>(step), static_cast<long long>(total), loss);
  std::fflush(stdout);
}

}  // namespace

Trainer::Trainer(StepEngine& engine, TrainerOptions options)
    : engine_(&engine),
      options_(std::move(options)),
      params_(engine_->parameters()),
      optimizer_(engine_->optimizer_parameters(), options_.adamw) {
  HT_CHECK(options_.steps >= 1, "trainer: steps must be >= 1");
  if (options_.loss_scale) scaler_.emplace(*options_.loss_scale);
  HT_CHECK(options_.switches.empty() && options_.straggler == nullptr,
           "trainer: strategy switches need the trainer built from a StrategyRun");
  log_optimizer_state();
}

Trainer::Trainer(StrategyRun initial, TrainerOptions options)
    : engine_(initial.engine),
      options_(std::move(options)),
      current_(std::move(initial)),
      params_(engine_->parameters()),
      optimizer_(engine_->optimizer_parameters(), options_.adamw) {
  HT_CHECK(options_.steps >= 1, "trainer: steps must be >= 1");
  HT_CHECK(current_.strategy != nullptr && current_.comm != nullptr, "trainer: a StrategyRun needs its strategy and comm");
  if (options_.loss_scale) scaler_.emplace(*options_.loss_scale);
  for (size_t i = 1; i < options_.switches.size(); ++i) {
    HT_CHECK(options_.switches[i - 1].after_step < options_.switches[i].after_step,
             "trainer: strategy switches must come in increasing step order");
  }
  log_optimizer_state();
}

void Trainer::release_gradients() const {
  for (const nn::NamedParameter& p : params_) p.tensor.set_grad(Tensor());
  for (const nn::NamedParameter& p : engine_->optimizer_parameters()) p.tensor.set_grad(Tensor());
}

// Note [Switch memory]: on a virtual machine a page touched for the first time costs over ten
// times writing it again, and the pages of the state are most of a switch's bytes. So the
// switch touches as few fresh pages as it can: the gradients go back to the allocator's pool
// (storage_pool.h) before the next run is built, so that its parameters are allocated on
// their pages; the previous run is released before the moves, so that each old tensor is
// freed as soon as it has been moved and its pages serve the next ones; the moments are
// resharded into tensors of their own that AdamW adopts (a piece that is the same under both
// layouts keeps its storage), instead of AdamW allocating zeros to be overwritten.
void Trainer::switch_to(StrategyRun next, const BatchSource& data) {
  HT_CHECK(current_.strategy != nullptr && next.strategy != nullptr && next.engine != nullptr && next.train != nullptr,
           "trainer: a switch needs the current and the next strategy's run");
  const auto start = Clock::now();
  // What the moves need of the current run, kept before it is released.
  const Strategy from{current_.strategy->name, current_.strategy->layout, current_.strategy->placements, nullptr};
  const std::string position = data.save_position();
  const int64_t steps_taken = optimizer_.steps_taken();
  release_gradients();
  std::map<std::string, Tensor> old;  // this rank's tensors under `from`, by name: their only handles
  for (const nn::NamedParameter& p : params_) old[p.name] = p.tensor;
  for (const nn::NamedParameter& s : optimizer_.state()) old[s.name] = s.tensor;
  const size_t held_before = old.size();
  params_.clear();
  optimizer_ = optim::AdamW({}, options_.adamw);
  current_ = StrategyRun{};  // releases the previous run's objects
  engine_ = nullptr;
  const Strategy& to = *next.strategy;
  Communicator& comm = *next.comm;
  std::vector<nn::NamedParameter> params = next.engine->parameters();
  std::map<std::string, Tensor> fresh;  // the next run's parameters, by name
  for (const nn::NamedParameter& p : params) fresh[p.name] = p.tensor;
  std::map<std::string, Tensor> moments;  // the moved AdamW moments, by name
  double param_s = 0, moment_s = 0;
  const auto release_s = seconds_since(start);
  auto move = [&](const optim::TrainedTensor& t, const TensorPlacement& q, const TensorPlacement& p) {
    const auto move_start = Clock::now();
    Tensor was;  // the last handle: freed once moved
    if (auto it = old.find(t.name); it != old.end()) {
      was = std::move(it->second);
      old.erase(it);
    }
    const Union& dst = t.annotation(p);
    // A rank holds a tensor under an annotation exactly when it is in it (checked by reshard).
    const bool holds = dst.member_of(comm.rank()).has_value();
    Tensor into;  // a parameter goes straight into the next run's tensor, which is contiguous
    if (!t.optimizer_state) {
      auto now = fresh.find(t.name);
      HT_CHECK(holds == (now != fresh.end()), "switch {} -> {}: rank {} {} {} but {} in its annotation", from.name,
               to.name, comm.rank(), now != fresh.end() ? "holds" : "does not hold", t.name, holds ? "is" : "is not");
      if (holds) into = now->second;
      HT_CHECK(!into.defined() || into.is_contiguous(), "switch {} -> {}: {} is not contiguous", from.name, to.name,
               t.name);
    }
    const DType dtype = was.defined() ? was.dtype() : into.defined() ? into.dtype() : DType::f32;
    Tensor moved = reshard(was, t.annotation(q), dst, p, dtype, comm, *to.plans, into);
    if (t.optimizer_state && moved.defined()) moments[t.name] = std::move(moved);
    (t.optimizer_state ? moment_s : param_s) += seconds_since(move_start);
  };
  for (const TensorPlacement& p : to.placements) {  // name order: the same on every rank
    const TensorPlacement& q = from.placement(p.name);
    HT_CHECK(q.shape == p.shape && q.view == p.view, "switch {} -> {}: {} is {} viewed as {} before and {} viewed as {} "
             "after", from.name, to.name, p.name, shape_str(q.shape), shape_str(q.view), shape_str(p.shape),
             shape_str(p.view));
    for (const optim::TrainedTensor& t : optim::trained_tensors(p)) move(t, q, p);
  }
  const auto adopt_start = Clock::now();
  // The moments in AdamW's order (state() of the optimized parameters: ZeRO-1's shards have the state layout).
  std::vector<nn::NamedParameter> state;
  for (const nn::NamedParameter& p : next.engine->optimizer_parameters()) {
    for (const std::string& name : optim::state_names(p.name)) {
      auto it = moments.find(name);
      HT_CHECK(it != moments.end(), "switch {} -> {}: rank {} optimizes {} but received no {}", from.name, to.name,
               comm.rank(), p.name, name);
      state.push_back({name, it->second.reshape(p.tensor.shape())});
    }
  }
  HT_CHECK(state.size() == moments.size(), "switch {} -> {}: rank {} received {} moments for {} optimized parameters",
           from.name, to.name, comm.rank(), moments.size(), next.engine->optimizer_parameters().size());
  optimizer_ = optim::AdamW(next.engine->optimizer_parameters(), options_.adamw, state);
  optimizer_.set_steps_taken(steps_taken);
  next.engine->load_optimizer_parameters();  // ZeRO-1 master shards from the moved parameters
  next.train->restore_position(position);
  const double adopt_s = seconds_since(adopt_start);
  spdlog::info("switched strategy {} -> {} after {} optimizer steps (this rank held {} tensors before, {} after; {} "
               "plans cached); moves: releasing the previous run {:.3f} s, parameters {:.3f} s, AdamW moments "
               "{:.3f} s, the next optimizer {:.3f} s", from.name, to.name, steps_taken, held_before,
               params.size() + moments.size(), to.plans->size(), release_s, param_s, moment_s, adopt_s);
  params_ = std::move(params);
  engine_ = next.engine;
  current_ = std::move(next);
  log_optimizer_state();
}

void Trainer::log_optimizer_state() const {
  auto bytes = [](const std::vector<nn::NamedParameter>& tensors) {
    size_t total = 0;
    for (const nn::NamedParameter& t : tensors) total += static_cast<size_t>(t.tensor.numel()) * dtype_size(t.tensor.dtype());
    return total;
  };
  const size_t moments = bytes(optimizer_.state());
  const size_t masters = bytes(engine_->optimizer_parameters());  // the parameters, or ZeRO-1's shards
  spdlog::info("optimizer state on this rank: {} bytes (AdamW moments {} + f32 master weights {})", moments + masters,
               moments, masters);
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
  if (current_.strategy != nullptr) s.metadata[kStrategyKey] = current_.strategy->name;
  if (scaler_) scaler_->save(s.metadata);
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
  engine_->load_optimizer_parameters();
  auto position = s.metadata.find(kDataPositionKey);
  HT_CHECK(position != s.metadata.end(), "resume: the checkpoint has no data position");
  train.restore_position(position->second);
  auto steps = s.metadata.find(kOptimizerStepKey);
  optimizer_.set_steps_taken(steps != s.metadata.end() ? std::stoll(steps->second) : s.step);
  if (scaler_) scaler_->restore(s.metadata);
}

bool Trainer::unscale_overflowed(int64_t step) {
  static const int64_t overflow_step = optim::test_overflow_step();
  if (step == overflow_step && (current_.comm == nullptr || current_.comm->rank() == 0)) {
    for (const nn::NamedParameter& p : engine_->optimizer_parameters()) {  // the test hook (loss_scaler.h)
      if (!p.tensor.grad().defined() || p.tensor.grad().numel() == 0) continue;
      p.tensor.grad().view({-1}).narrow(0, 0, 1).copy_from(full({1}, INFINITY, p.tensor.grad().dtype(), Device::cpu()));
      break;
    }
  }
  const bool overflow = engine_->any_rank(scaler_->unscale(engine_->optimizer_parameters()));
  scaler_->update(overflow);
  return overflow;
}

double Trainer::evaluate(BatchSource& val) {
  timing::Scope scope(timing::Phase::eval, "eval");
  const std::string start = val.save_position();  // every evaluation reads the same batches
  const double loss = engine_->evaluate(val, options_.eval_steps);
  val.restore_position(start);
  return loss;
}

TrainResult Trainer::run(BatchSource& first_train, BatchSource* val, CheckpointStore* first_store) {
  TrainResult result;
  BatchSource* train_source = &first_train;  // the current strategy's (switch_to changes them)
  CheckpointStore* store = first_store;
  int64_t step = 0;
  if (store != nullptr && options_.resume != "never") {
    const auto load_start = Clock::now();
    std::optional<Snapshot> snap = options_.resume == "auto" ? store->load_latest() : store->load(options_.resume);
    if (snap) {
      restore(*snap, first_train);
      step = snap->step;
      spdlog::info("resumed from step {} ({}) in {:.3f} s", step,
                   options_.resume == "auto" ? "latest checkpoint" : options_.resume, seconds_since(load_start));
      // The checkpoint loaded under the first strategy (any layout loads any checkpoint); the
      // run continues under the one in effect after `step`: the last switch at or before it.
      // The checkpoint was written under that one, or (at a switch's own step, before the
      // switch) under the one in effect before.
      const std::string first = current_.strategy != nullptr ? current_.strategy->name : "";
      const StrategySwitch* in_effect = nullptr;
      const StrategySwitch* before = nullptr;
      for (const StrategySwitch& s : options_.switches) {
        if (s.after_step <= step) in_effect = &s;
        if (s.after_step < step) before = &s;
      }
      if (in_effect != nullptr) {
        switch_to(in_effect->enter(), *train_source);
        train_source = current_.train;
        store = current_.store;
      }
      auto written = snap->metadata.find(kStrategyKey);
      const std::string after_name = in_effect != nullptr ? in_effect->strategy : first;
      const std::string before_name = before != nullptr ? before->strategy : first;
      if (written != snap->metadata.end() && written->second != after_name && written->second != before_name) {
        spdlog::warn("resume: the checkpoint of step {} was written under strategy \"{}\"; the job's switch list puts "
                     "\"{}\" in effect after that step, which the run continues under", step, written->second,
                     after_name);
      }
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
    engine_->load_optimizer_parameters();
    spdlog::info("initialised {} parameters from {}", params_.size(), options_.init_from);
  }
  result.first_step = step;
  std::unique_ptr<MetricsWriter> metrics;
  // A resumed run continues metrics.jsonl (without the steps it repeats); a fresh one
  // replaces an old run's file.
  if (!options_.metrics_path.empty()) metrics = std::make_unique<MetricsWriter>(options_.metrics_path, step);

  double step_tokens = engine_->tokens_per_step();
  size_t next_switch = 0;
  while (next_switch < options_.switches.size() && options_.switches[next_switch].after_step <= step) ++next_switch;
  auto window_start = Clock::now();
  int64_t window_steps = 0;
  const auto run_start = Clock::now();
  const int64_t run_first = step;
  const int64_t last = options_.stop_at_step > 0 ? std::min(options_.stop_at_step, options_.steps) : options_.steps;
  StepTelemetry telemetry(options_.telemetry);
  double switch_seconds = 0, switch_reshard_seconds = 0;  // strategy switches not yet in metrics
  // Builds the next strategy's run and switches to it, between two steps.
  auto enter_strategy = [&](const std::function<StrategyRun()>& enter) {
    timing::Scope switch_scope(timing::Phase::other, "switch");
    const auto switch_start = Clock::now();
    release_gradients();  // their pages serve the next run's tensors (Note [Switch memory])
    StrategyRun next = enter();
    const double build_s = seconds_since(switch_start);
    switch_to(std::move(next), *train_source);
    const double switch_s = seconds_since(switch_start);
    spdlog::info("switched to strategy '{}' in {:.3f} s ({:.3f} s building its run, {:.3f} s resharding the state)",
                 current_.strategy->name, switch_s, build_s, switch_s - build_s);
    switch_seconds += switch_s;
    switch_reshard_seconds += switch_s - build_s;
    train_source = current_.train;
    store = current_.store;
    step_tokens = engine_->tokens_per_step();
    window_start = Clock::now();
  };
  bool like_others = false;  // the step is a straggler sample: not the run's first, nor the first after a switch
  while (step < last) {
    if (options_.before_step) options_.before_step(step + 1);
    if (options_.straggler != nullptr) options_.straggler->step_begins();
    const StepTelemetry::Step in_step = telemetry.step(step + 1, last);
    const double lr = options_.schedule.at(step);
    const double step_scale = scaler_ ? scaler_->scale() : 1.0;  // the loss scale this step runs at
    engine_->set_loss_scale(step_scale);
    const double loss_sum = engine_->forward_backward(*train_source);  // See Note [Loss normalisation]
    timing::Scope optimizer_scope(timing::Phase::optimizer, "optimizer");
    const bool skipped = scaler_ && unscale_overflowed(step + 1);
    const double norm = skipped ? std::nan("") : engine_->grad_norm();
    // Clipping is folded into the update (AdamW::step's grad_scale): no pass of its own.
    const double clip = optim::clip_factor(norm, options_.grad_clip);
    if (!std::isfinite(loss_sum) || (!skipped && !std::isfinite(norm))) {
      HT_THROW("step {}: the loss is {} and the gradient norm {}; stopping before the optimizer step (the last good "
               "checkpoint is untouched; lower training.lr or check the data)", step + 1, loss_sum, norm);
    }
    if (skipped) {
      spdlog::warn("step {}: inf/nan in the fp16 gradients at loss scale {}; step skipped (no optimizer update), the "
                   "scale is now {} ({} skipped so far)", step + 1, step_scale, scaler_->scale(),
                   scaler_->skipped_steps());
      result.skipped_steps.push_back(step + 1);
    } else {
      optimizer_.step(lr, clip);
      engine_->refresh_parameters();
    }
    optimizer_scope.end();
    if (options_.straggler != nullptr) options_.straggler->step_computed();
    ++step;
    ++window_steps;
    result.losses.push_back(loss_sum);
    if (options_.progress_bar) draw_bar(step, options_.steps, loss_sum);

    const bool evaluate_now = val != nullptr && options_.eval_every > 0 && step % options_.eval_every == 0;
    const bool log_now = step % options_.log_every == 0 || step == last || evaluate_now || skipped;
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
      if (scaler_) m.loss_scale = step_scale;
      m.skipped = skipped;
      m.step_seconds = window_s / static_cast<double>(window_steps);
      m.tokens_per_s = step_tokens / m.step_seconds;
      m.mfu = shown_mfu(options_.peak_flops > 0 ? m.tokens_per_s * options_.flops_per_token / options_.peak_flops : 0);
      m.eta_seconds = run_s / static_cast<double>(step - run_first) * static_cast<double>(options_.steps - step);
      const Device device = params_.empty() ? Device::cpu() : params_.front().tensor.device();
      if (device.is_cpu()) m.peak_memory_gib = static_cast<double>(cpu_memory_usage().peak) / (1 << 30);
      if constexpr (cuda::kBuilt) {
        if (device.is_cuda()) m.peak_memory_gib = static_cast<double>(cuda::memory_stats(device.index).peak_allocated) / (1 << 30);
      }
      m.time_json = telemetry.collect(window_steps, m.peak_memory_gib.value_or(-1));
      if (switch_seconds > 0) {  // the switches since the previous line
        m.switch_seconds = std::exchange(switch_seconds, 0.0);
        m.switch_reshard_seconds = std::exchange(switch_reshard_seconds, 0.0);
      }
      if (options_.progress_bar) std::fputs("\n", stdout);
      spdlog::info("{}", progress_line(m));
      if (metrics) metrics->write(m);
      window_start = Clock::now();
      window_steps = 0;
    }
    // hetu launch's per-step state, after the step is logged: a relaunch loses at most this
    // step. A rank killed between the two resumes from the step before, and the relaunch's
    // MetricsWriter drops the logged line it repeats, so every step stays logged once.
    if (store != nullptr && store->keeps_step_snapshots()) {
      timing::Scope snapshot_scope(timing::Phase::checkpoint, "state snapshot");
      store->save_step_snapshot(snapshot(step, *train_source));
    }
    const bool stop = engine_->any_rank(stop_requested());
    const bool periodic = options_.checkpoint_every > 0 && step % options_.checkpoint_every == 0;
    if (store != nullptr && (periodic || step == last || stop)) {
      timing::Scope checkpoint_scope(timing::Phase::checkpoint, "checkpoint");
      const auto save_start = Clock::now();
      result.last_checkpoint = store->save(snapshot(step, *train_source));
      spdlog::info("checkpoint: {} (saved in {:.3f} s)", result.last_checkpoint, seconds_since(save_start));
      window_start = Clock::now();  // do not count the save in the next throughput
    }
    if (stop) {
      result.stop_signal = stop_signal();
      spdlog::info("stopping on {} after step {}{}", stop_signal_name(result.stop_signal), step,
                   result.last_checkpoint.empty() ? "" : " (checkpoint " + result.last_checkpoint + ")");
      break;
    }
    const bool sample = std::exchange(like_others, true);
    if (next_switch < options_.switches.size() && options_.switches[next_switch].after_step == step && step < last) {
      enter_strategy(options_.switches[next_switch++].enter);
      like_others = false;
    }
    if (options_.straggler != nullptr && step < last) {
      if (std::function<StrategyRun()> enter = options_.straggler->after_step(step, sample)) {
        enter_strategy(enter);
        like_others = false;
      }
    }
  }
  return result;
}

}  // namespace hetu::runtime
