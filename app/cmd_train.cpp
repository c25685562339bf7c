// `hetu train CONFIG [--set k=v]... [--dry-run]`: every rank loads and validates the job,
// checks the launched ranks against the device groups, and maps rank -> device by host and
// local index (rank_map.h). --dry-run stops there. Otherwise it builds this rank's model
// part, its data loader (its replica's share of each global batch), the sharded checkpoint
// store and runs the Trainer with a ParallelEngine (any layout; one device is a world of
// one; an IdleEngine on a rank the strategy leaves out); each [[parallel.switch]] builds the
// rank's run under the next strategy when the Trainer reaches it. Writes out_dir/{config.resolved.toml,
// metrics.jsonl, logs/, checkpoints/}. SIGTERM/SIGUSR1 end the run after the current step
// with a checkpoint (stop_request.h). Emulated devices and links (device_emulation.h) wrap
// the MPI communicator and cap the CPU allocator. `[parallel] auto = true` plans the layout
// first (auto_layout.h); `[straggler] enabled = true` re-plans around slow ranks while it
// trains (straggler_plan.h); `[[parallel.bucket]]` runs each step's documents by length under
// several strategies (bucketed_run.h; their lanes' memory checked at launch,
// bucket_memory_check.h), or with `[parallel] auto = true` and documents under
// buckets planned each step (auto_buckets.h).
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <thread>
#include <fmt/core.h>

#include "lib/plan/auto_layout.h"
#include "lib/plan/auto_buckets.h"
#include "lib/plan/bucket_memory_check.h"
#include "lib/train/bucketed_run.h"
#include "lib/util/build_info.h"
#include "lib/weights/model_weights.h"
#include "app/commands.h"
#include "lib/config/compute_device.h"
#include "lib/config/device_spec.h"
#include "lib/launch/out_dir_lock.h"
#include "lib/emulation/device_emulation.h"
#include "lib/launch/launch_job.h"
#include "lib/launch/rank_map.h"
#include "lib/plan/straggler_plan.h"
#include "lib/hspmd/comm_deadline.h"
#include "lib/hspmd/mpi_session.h"
#include "lib/checkpoint/checkpoint.h"
#include "lib/dataset/data_loader.h"
#include "lib/checkpoint/recovery_store.h"
#include "lib/checkpoint/train_checkpoint_store.h"
#include "lib/ops/cpu/gemm_choice.h"
#include "lib/ops/ops.h"
#include "lib/runtime/idle_engine.h"
#include "lib/runtime/mfu.h"
#include "lib/runtime/parallel_engine.h"
#include "lib/runtime/stop_request.h"
#include "lib/runtime/trainer.h"
#include "lib/util/atomic_file.h"
#include "lib/util/error.h"
#include "lib/util/step_timer.h"
#include "lib/util/strings.h"
#include "lib/models/language_model.h"
#include "lib/models/model_family.h"
#include "lib/models/parallel_model.h"

namespace hetu::app {
namespace {

// The Trainer's data interface over dataset::DataLoader, batches moved to the compute device.
class LoaderSource final : public runtime::BatchSource {
 public:
  LoaderSource(const dataset::DataLoaderOptions& options, Device device) : loader_(options), device_(device) {}
  runtime::Batch next() override {
    timing::Scope scope(timing::Phase::data, "data");
    dataset::Batch b = loader_.next();
    return {b.x.to(device_), b.y.to(device_), std::move(b.cu_seqlens), b.global_targets};
  }
  std::string save_position() const override { return loader_.position().to_string(); }
  void restore_position(const std::string& position) override { loader_.restore(dataset::DataPosition::parse(position)); }

 private:
  dataset::DataLoader loader_;
  Device device_;
};

// MFU's denominator: the catalogue's peak for GPUs, and for CPUs when the job's catalogue
// file gives the type its own nominal peak; otherwise the cached sgemm probe (mfu.h).
double device_peak_flops(const config::LoadedConfig& loaded, const config::DeviceId& device) {
  const config::JobConfig& c = loaded.config;
  const config::DeviceProfile* profile = config::device_profile(loaded, device);
  if (profile != nullptr && profile->kind == config::DeviceKind::gpu) {
    return 1e12 * (c.training.precision == config::Precision::bf16 ? profile->peak_tflops_bf16 : profile->peak_tflops_fp32);
  }
  const config::DeviceProfile* builtin = profile != nullptr ? config::DeviceCatalog::builtin().find(profile->name) : nullptr;
  if (profile != nullptr && profile->peak_tflops_fp32 > 0 &&
      (builtin == nullptr || builtin->peak_tflops_fp32 != profile->peak_tflops_fp32)) {
    return 1e12 * profile->peak_tflops_fp32;
  }
  spdlog::info("CPU GEMM: {}", ops::cpu::gemm_choice_summary());
  const char* home = std::getenv("HOME");
  const std::string cache = fmt::format("{}/.cache/hetu/sgemm-peak-{}t.txt", home ? home : "/tmp", ops::num_threads());
  std::error_code ec;
  const auto built = std::filesystem::last_write_time("/proc/self/exe", ec);
  const int64_t build_time = ec ? 0 : std::chrono::duration_cast<std::chrono::seconds>(
      std::chrono::file_clock::to_sys(built).time_since_epoch()).count();
  const runtime::PeakContext context{runtime::cpu_model_name(), ops::num_threads(), build_time,
                                     static_cast<int64_t>(std::thread::hardware_concurrency())};
  return runtime::cpu_peak_flops(cache, context, [](double s) { return ops::measure_sgemm_flops(s); },
                                 runtime::runnable_other_processes);
}

optim::LrDecayKind decay_kind(config::LrDecay decay) {
  switch (decay) {
    case config::LrDecay::constant: return optim::LrDecayKind::constant;
    case config::LrDecay::linear: return optim::LrDecayKind::linear;
    case config::LrDecay::cosine: return optim::LrDecayKind::cosine;
  }
  return optim::LrDecayKind::cosine;
}

runtime::TrainerOptions trainer_options(const config::JobConfig& c, int64_t stop_at_step, bool reporting_rank) {
  runtime::TrainerOptions o;
  o.steps = c.training.steps;
  o.schedule = {c.optimizer.lr, c.lr_schedule.warmup_steps, c.training.steps, decay_kind(c.lr_schedule.decay),
                c.lr_schedule.min_lr_ratio};
  o.adamw = {c.optimizer.beta1, c.optimizer.beta2, c.optimizer.eps, c.optimizer.weight_decay};
  o.grad_clip = c.training.grad_clip;
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

// data.packing = "documents": whole documents per row, balanced over the replicas by attention cost.
void set_packing(const config::JobConfig& c, dataset::DataLoaderOptions& d) {
  if (c.data.packing == config::Packing::documents) d.packing = dataset::Packing::documents;
}

// shares: every replica's batch share (packed documents balance over them; an idle rank's
// one-sequence reader passes none: its data position still moves a global batch per step).
dataset::DataLoaderOptions train_data(const config::JobConfig& c, const pipeline::ReplicaLayout& replica,
                                 std::vector<int64_t> shares = {}) {
  dataset::DataLoaderOptions d;
  d.pattern = c.data.train;
  d.seq_len = c.training.seq_len;
  d.global_batch = c.training.global_batch;
  d.share_offset = replica.batch_offset;
  d.share_count = replica.batch;
  d.micro_batch = replica.micro_batch;
  d.sampling = c.data.sampling == config::Sampling::shuffled ? dataset::Sampling::shuffled : dataset::Sampling::sequential;
  d.seed = c.job.seed;
  set_packing(c, d);
  d.balance_window = c.data.balance_window;
  d.shares = std::move(shares);
  return d;
}

// Validation batches of training.micro_batch sequences, in every layout (so every layout
// evaluates the same batches).
std::unique_ptr<LoaderSource> val_source(const config::JobConfig& c, Device device) {
  if (c.training.eval_every <= 0) return nullptr;
  dataset::DataLoaderOptions d;
  d.pattern = c.data.val;
  d.seq_len = c.training.seq_len;
  d.global_batch = c.training.micro_batch;
  set_packing(c, d);
  return std::make_unique<LoaderSource>(d, device);
}

void report(const runtime::TrainResult& result) {
  spdlog::info("done: {} steps, final loss {:.4f}{}; checkpoint {}", result.losses.size(),
               result.losses.empty() ? 0.0 : result.losses.back(),
               result.val_losses.empty() ? "" : fmt::format(", val loss {:.4f}", result.val_losses.back()),
               result.last_checkpoint);
}

// One rank's model part, engine, data loader and checkpoint store under one strategy.
struct RankRun {
  runtime::Strategy strategy;
  std::unique_ptr<ParallelModel> part;      // none on a rank the strategy leaves idle
  std::unique_ptr<runtime::StepEngine> engine;
  std::unique_ptr<LoaderSource> train;
  std::vector<TensorPlacement> local;  // this rank's parameters' (the store's)
  std::unique_ptr<runtime::CheckpointStore> store;
};

// The durable sharded store, with this rank's per-step state snapshot when hetu launch gave
// a state folder (--state-dir; lib/checkpoint/recovery_store.h; a rehearsed node's own: node_state_dir).
std::unique_ptr<runtime::CheckpointStore> checkpoint_store(const config::JobConfig& c,
                                                           const std::vector<TensorPlacement>& local,
                                                           Communicator& host_comm, const std::string& state_dir) {
  const std::string dir = c.job.out_dir + "/checkpoints";
  if (state_dir.empty()) return std::make_unique<checkpoint::ShardedStore>(dir, c.checkpoint.keep, local, host_comm);
  return std::make_unique<checkpoint::RecoveryStore>(dir, c.checkpoint.keep, local, host_comm,
                                             launch::node_state_dir(c, host_comm.rank(), state_dir));
}

// Every trained tensor of the whole model with its placement under `layout`, in name order,
// the same on every rank: the names and shapes come from the family's parameter catalogue (a
// rank's part holds only its stages' parameters), checked against the ones this rank built.
std::vector<TensorPlacement> job_placements(const config::JobConfig& c, const pipeline::ParallelLayout& layout,
                                            const std::vector<TensorPlacement>& local) {
  const std::map<std::string, Shape> shapes = model_family(c.model.arch).parameter_shapes(c.model);
  for (const TensorPlacement& p : local) {
    auto it = shapes.find(p.name);
    HT_CHECK(it != shapes.end() && it->second == p.shape, "strategy: the model part holds {} {}, the {} catalogue {}",
             p.name, shape_str(p.shape), to_string(c.model.arch),
             it == shapes.end() ? std::string("has no such parameter") : "says " + shape_str(it->second));
  }
  std::vector<TensorPlacement> out;
  for (const auto& [name, shape] : shapes) {
    std::optional<TensorPlacement> p = placement_of(c.model, layout, name, shape);
    HT_CHECK(p.has_value(), "strategy: no stage of the layout holds {}", name);
    out.push_back(std::move(*p));
  }
  return out;
}

// Without `fill_parameters` the part's parameters are allocated only (a switch moves them in).
runtime::StrategyRun build_run(std::string name, const config::JobConfig& c, const pipeline::ParallelLayout& layout,
                               int rank, Communicator& comm, Communicator& host_comm, Device compute,
                               const std::string& state_dir, bool fill_parameters = true) {
  auto run = std::make_shared<RankRun>();
  const std::optional<pipeline::Position> located = layout.locate(rank);
  if (!located) {
    // Idle: no model part, no compute; one sequence of each global batch keeps the data position.
    spdlog::info("strategy {}: this rank is idle (no model part)", name);
    run->strategy = runtime::make_strategy(std::move(name), layout, job_placements(c, layout, {}));
    run->engine = std::make_unique<runtime::IdleEngine>(comm, static_cast<double>(layout.global_batch * c.training.seq_len));
    pipeline::ReplicaLayout one_sequence;
    run->train = std::make_unique<LoaderSource>(train_data(c, one_sequence), compute);
    run->store = checkpoint_store(c, run->local, host_comm, state_dir);
    return {&run->strategy, run->engine.get(), run->train.get(), run->store.get(), &comm, run};
  }
  const pipeline::Position position = *located;
  const pipeline::ReplicaLayout& replica = layout.replicas[static_cast<size_t>(position.replica)];
  const DType activations = config::compute_dtype(c.training.precision);
  run->part = std::make_unique<ParallelModel>(c.model, c.job.seed, layout, position, &comm, activations,
                                              fill_parameters);
  ParallelModel& part = *run->part;
  part.model().to(compute);
  spdlog::info("model part ({}): {} parameters on {} (replica {}, stage {}, tp rank {}/{}, layers {}-{}), computing "
               "in {}, gradients summed in {} over {}", name,
               part.model().num_parameters(), compute.str(), position.replica, position.stage, position.tp_index,
               layout.stage(position).tp(), layout.stage(position).first_layer, layout.stage(position).last_layer,
               to_string(c.training.precision), to_string(c.training.grad_reduce_dtype), comm.backend());
  run->local = part.placements();
  const std::vector<TensorPlacement>& local = run->local;
  run->strategy = runtime::make_strategy(std::move(name), layout, job_placements(c, layout, local));
  run->engine = std::make_unique<runtime::ParallelEngine>(
      run->strategy, position, comm, part.stage(), part.model().named_parameters(), c.training.seq_len, c.model.hidden,
      c.training.micro_batch, activations, config::compute_dtype(c.training.grad_reduce_dtype));
  std::vector<int64_t> shares;
  for (const pipeline::ReplicaLayout& r : layout.replicas) shares.push_back(r.batch);
  run->train = std::make_unique<LoaderSource>(train_data(c, replica, std::move(shares)), compute);
  run->store = checkpoint_store(c, local, host_comm, state_dir);
  return {&run->strategy, run->engine.get(), run->train.get(), run->store.get(), &comm, run};
}

// "rank 3 (replica 1, stage 0, tp 1)" under `layout`, or "rank 3 (idle)".
std::string rank_label(const pipeline::ParallelLayout& layout, int rank) {
  const std::optional<pipeline::Position> p = layout.locate(rank);
  if (!p) return fmt::format("rank {} (idle)", rank);
  return fmt::format("rank {} (replica {}, stage {}, tp {})", rank, p->replica, p->stage, p->tp_index);
}

// Every layout, one device included (a world of one: make_local_communicator).
int train(const TrainOptions& options, const config::LoadedConfig& loaded, const pipeline::ParallelLayout& layout,
          const launch::RankMap& ranks, const MpiSession& mpi, const profile::Profile& straggler_profile, bool plan_buckets) {
  const config::DeviceId& device = ranks.device_of_rank[static_cast<size_t>(mpi.rank())];
  const config::JobConfig& c = loaded.config;
  const Device compute = config::compute_device(loaded, device);
  // Host-side traffic (checkpoint token passing, the MFU peak) goes over MPI; the training
  // tensors over the communicator of the compute device (NCCL on GPUs).
  const bool alone = mpi.world_size() == 1;
  const bool straggler = c.straggler.enabled && !alone;
  std::unique_ptr<Communicator> host_comm =
      alone ? make_local_communicator() : emulation::with_emulation(make_mpi_communicator(), loaded, ranks, straggler);
  std::unique_ptr<Communicator> device_comm;
  if (compute.is_cuda()) device_comm = alone ? make_local_communicator(compute) : make_nccl_communicator(compute.index);
  Communicator& comm = device_comm ? *device_comm : *host_comm;
  runtime::StrategyRun initial = build_run(config::kDefaultStrategy, c, layout, mpi.rank(), comm, *host_comm, compute,
                                                options.state_dir);
  if (!c.buckets.empty() || plan_buckets) {  // a layout per batch, the state in the default layout (bucketed_run.h)
    auto layout_of = [&](const std::string& name) { return launch::parallel_layout(c, c.strategy(name), ranks); };
    // [parallel] auto: each step's buckets from the launch profile (straggler_profile holds it).
    dataset::BucketPlanFn plan = plan_buckets ? plan::auto_bucket_plan(loaded, straggler_profile, layout_of) : dataset::BucketPlanFn{};
    initial = train::bucketed_run(c, std::move(initial), [&](const std::string& name) {
      return build_run(name, c, layout_of(name), mpi.rank(), comm, *host_comm, compute, options.state_dir,
                       /*fill_parameters=*/false);
    }, layout_of, train_data(c, pipeline::ReplicaLayout{}), compute, std::move(plan));
  }
  // Every rank takes part in evaluation (replica 0 computes, the others join the sum).
  std::unique_ptr<LoaderSource> val = val_source(c, compute);

  runtime::TrainerOptions o = trainer_options(c, options.stop_at_step, mpi.rank() == 0);
  if (!alone) o.progress_bar = false;  // under mpirun a rank's stdout is a pty even when the output is piped
  o.flops_per_token = training_flops_per_token(c.model, c.training.seq_len);
  // MFU against the sum of every rank's device peak.
  Tensor peak = full({1}, device_peak_flops(loaded, device), DType::f64);
  host_comm->all_reduce(peak, host_comm->world());
  o.peak_flops = peak.item();
  o.telemetry.comm = host_comm.get();
  o.telemetry.rank_label = rank_label(layout, mpi.rank());
  // [[parallel.switch]]: after each at_step the run continues under the named strategy.
  for (const config::SwitchSection& change : c.switches) {
    const pipeline::ParallelLayout next_layout = launch::parallel_layout(c, c.strategy(change.strategy), ranks);
    o.switches.push_back({change.at_step, change.strategy, [&, name = change.strategy, next_layout] {
      return build_run(name, c, next_layout, mpi.rank(), comm, *host_comm, compute, options.state_dir,
                       /*fill_parameters=*/false);
    }});
  }
  o.before_step = emulation::slowdown_schedule(*host_comm, loaded, device);
  if (straggler) {
    o.straggler = plan::make_straggler_watch(loaded, straggler_profile, ranks, *host_comm,
                                       [&](std::string name, const config::JobConfig& job) {
      return build_run(std::move(name), job, launch::parallel_layout(job, ranks), mpi.rank(), comm, *host_comm, compute, options.state_dir,
                       /*fill_parameters=*/false);
    });
  } else if (c.straggler.enabled) {
    spdlog::info("straggler: one rank has no other to compare with; straggler re-planning is off");
  }
  runtime::Trainer trainer(initial, o);
  report(trainer.run(*initial.train, val.get(), initial.store));
  if (const std::string emulation = emulation::emulation_report(*host_comm); !emulation.empty()) spdlog::info("{}", emulation);
  return 0;
}

// The job of this rank; `training` becomes true where training starts (a usage error before
// that, a bad job file or a locked out_dir, is the same on every rank).
int train_job(const TrainOptions& options, const MpiSession& mpi, bool& training) {
  config::LoadedConfig loaded = load_job(options);
  const config::JobConfig& c = loaded.config;
  set_comm_timeout(c.training.comm_timeout_s);
  ops::set_num_threads(static_cast<int>(c.training.threads));
  // One rank per device that any strategy uses ([parallel] and every [[parallel.strategy]]).
  const auto needed = static_cast<int64_t>(c.strategy_devices().size());
  const bool single_process_dry_run = options.dry_run && mpi.world_size() == 1;
  if (mpi.world_size() != needed && !single_process_dry_run) {
    HT_USAGE_ERROR("launched {} rank(s), but the [parallel] groups of {} name {} device(s): start one rank per "
                   "device, e.g. mpirun -np {} hetu train {} (or srun -n {})",
                   mpi.world_size(), c.source, needed, needed, c.source, needed);
  }
  // A one-process dry run of a multi-device job pretends the ranks run on this machine.
  const std::vector<std::string> hosts =
      single_process_dry_run ? std::vector<std::string>(static_cast<size_t>(needed), mpi.host()) : mpi.all_hosts();
  launch::RankMap ranks = launch::map_ranks(c, hosts);

  launch::OutDirLock out_dir_lock;  // held until the run ends
  if (!options.dry_run) {
    out_dir_lock = launch::lock_out_dir(c.job.out_dir, mpi);  // before anything in out_dir is written
    const std::string log_file = c.job.out_dir + "/logs/rank-" + std::to_string(mpi.rank()) + ".log";
    init_logging({mpi.rank(), options.log_level, log_file, true});
  }
  profile::Profile straggler_profile;  // what [straggler] predicts from: the launch plan's profile, or straggler.profile
  if (c.straggler.enabled && !c.straggler.profile.empty()) straggler_profile = profile::read_profile_file(c.straggler.profile);
  const bool plan_buckets = c.plans_buckets();  // before planning clears [parallel] auto
  if (c.parallel.auto_plan && (!options.dry_run || !c.parallel.profile.empty())) {
    loaded = plan::plan_at_launch(loaded, ranks, mpi,  // collective when it profiles
                            options.dry_run ? "" : c.job.out_dir + "/profile.toml", &straggler_profile);
    ranks = launch::map_ranks(c, hosts);
  } else if (c.parallel.auto_plan) {
    spdlog::info("parallel.auto: a dry run without parallel.profile does not profile; it checks the job with data "
                 "parallelism over every device");
  }
  if (!options.dry_run && mpi.rank() == 0) write_file_atomic(c.job.out_dir + "/config.resolved.toml", config::to_toml(c));
  const pipeline::ParallelLayout layout = launch::parallel_layout(c, ranks);
  if (c.straggler.enabled && !c.parallel.auto_plan) plan::check_straggler_job(loaded);
  if (!plan_buckets) plan::check_bucket_memory(loaded, straggler_profile);  // fixed buckets' lanes, before compute

  spdlog::info("hetu {} | job '{}' from {}", build_info().version, c.job.name, c.source);
  const std::string summary = config::describe(c);
  for (std::string_view line : split(summary, '\n')) {
    if (!line.empty()) spdlog::info("{}", line);
  }
  for (const std::string& warning : loaded.warnings) spdlog::warn("{}", warning);
  for (const std::string& line : emulation::describe_emulation(loaded)) spdlog::info("{}", line);
  if (single_process_dry_run && needed != 1) {
    spdlog::info("dry run in one process: a real run needs {} ranks (mpirun -np {})", needed, needed);
  }
  for (int rank = 0; rank < static_cast<int>(needed); ++rank) {
    const std::optional<pipeline::Position> p = layout.locate(rank);
    if (!p) {
      spdlog::info("rank {} -> {} (idle under the default strategy)", rank,
                   ranks.device_of_rank[static_cast<size_t>(rank)].str());
      continue;
    }
    const pipeline::StageLayout& stage = layout.stage(*p);
    spdlog::info("rank {} -> {} (replica {}, stage {}, tp rank {}/{}, layers {}-{})", rank,
                 ranks.device_of_rank[static_cast<size_t>(rank)].str(), p->replica, p->stage, p->tp_index, stage.tp(),
                 stage.first_layer, stage.last_layer);
  }
  if (options.dry_run) {
    spdlog::info("dry run: the job is valid; nothing was trained or written");
    return 0;
  }
  training = true;
  runtime::install_stop_handlers();
  const config::DeviceId& device = ranks.device_of_rank[static_cast<size_t>(mpi.rank())];
  emulation::limit_cpu_memory(loaded, device);
  const int code = train(options, loaded, layout, ranks, mpi, straggler_profile, plan_buckets);
  if (code == 0 && !options.state_dir.empty() && mpi.rank() == 0) {
    const std::string marker = launch::finished_marker(c.job.out_dir, options.state_dir);
    std::filesystem::create_directories(std::filesystem::path(marker).parent_path());
    write_file_atomic(marker, "hetu train ended with exit code 0\n");
  }
  return code;
}

// An error on one rank of several: the others would wait for it in their next collective,
// so it ends them all, each logging `message` (exit codes in README).
[[noreturn]] void end_job(const MpiSession& mpi, int exit_code, const std::string& message) {
  spdlog::error("hetu: error (rank {}): {}", mpi.rank(), message);
  mpi.abort(exit_code, message);
}

}  // namespace

int run_train(const TrainOptions& options) {
  MpiSession mpi(nullptr, nullptr);
  init_logging({mpi.rank(), options.log_level, "", true});
  bool training = false;
  if (mpi.world_size() == 1) return train_job(options, mpi, training);
  try {
    return mpi.finalize(train_job(options, mpi, training));
  } catch (const UsageError& error) {
    if (!training) throw;  // a job-file error: the same on every rank, printed once by main
    end_job(mpi, 2, error.message());
  } catch (const Error& error) {
    end_job(mpi, 1, fmt::format("{} [{}]", error.message(), error.where()));
  } catch (const std::exception& error) {
    end_job(mpi, 1, error.what());
  }
}

}  // namespace hetu::app
