// train_job (train_job.h): the job's checks, planning and logging, then the rank's training.
#include "lib/train/train_job.h"

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <memory>
#include <optional>

#include "lib/config/compute_device.h"
#include "lib/emulation/device_emulation.h"
#include "lib/hspmd/comm_deadline.h"
#include "lib/launch/launch_job.h"
#include "lib/launch/out_dir_lock.h"
#include "lib/launch/rank_map.h"
#include "lib/models/language_model.h"
#include "lib/ops/ops.h"
#include "lib/plan/auto_buckets.h"
#include "lib/plan/auto_layout.h"
#include "lib/plan/bucket_memory_check.h"
#include "lib/plan/straggler_plan.h"
#include "lib/profile/profile_file.h"
#include "lib/runtime/stop_request.h"
#include "lib/runtime/trainer.h"
#include "lib/train/bucketed_run.h"
#include "lib/train/peak_flops.h"
#include "lib/train/rank_run.h"
#include "lib/train/trainer_options.h"
#include "lib/util/atomic_file.h"
#include "lib/util/build_info.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace hetu::train {
namespace {

void report(const runtime::TrainResult& result) {
  spdlog::info("done: {} steps{}, final loss {:.4f}{}; checkpoint {}", result.losses.size(),
               result.skipped_steps.empty()
                   ? ""
                   : fmt::format(" ({} skipped for inf/nan fp16 gradients: {})", result.skipped_steps.size(),
                                 fmt::join(result.skipped_steps, ", ")),
               result.losses.empty() ? 0.0 : result.losses.back(),
               result.val_losses.empty() ? "" : fmt::format(", val loss {:.4f}", result.val_losses.back()),
               result.last_checkpoint);
}

// "rank 3 (replica 1, stage 0, tp 1)" under `layout`, or "rank 3 (idle)".
std::string rank_label(const pipeline::ParallelLayout& layout, int rank) {
  const std::optional<pipeline::Position> p = layout.locate(rank);
  if (!p) return fmt::format("rank {} (idle)", rank);
  return fmt::format("rank {} (replica {}, stage {}, tp {})", rank, p->replica, p->stage, p->tp_index);
}

// Every layout, one device included (a world of one: make_local_communicator).
int train(const TrainJobOptions& options, const config::LoadedConfig& loaded, const pipeline::ParallelLayout& layout,
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

}  // namespace

int train_job(config::LoadedConfig loaded, const TrainJobOptions& options, const MpiSession& mpi, bool& training) {
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

}  // namespace hetu::train
