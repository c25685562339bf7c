// `hetu train CONFIG [--set k=v]... [--dry-run]`: every rank loads and validates the job,
// checks the launched ranks against the device groups, and maps rank -> device. With
// --dry-run it prints the plan and stops; otherwise it prepares out_dir (logs/rank-N.log,
// config.resolved.toml). The training loop itself arrives with the model issue.
#include <spdlog/spdlog.h>

#include <filesystem>

#include "app/build_info.h"
#include "app/commands.h"
#include "app/config/device_spec.h"
#include "lib/dist/mpi_session.h"
#include "lib/ops/ops.h"
#include "lib/util/atomic_file.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace hetu::app {
namespace {

// Note [Rank order]: rank i runs the i-th device of the groups, walking replicas, then
// stages, then the devices of a stage in order. Host matching (rank -> device by host
// name and local index) replaces this with the distributed-training issue.
struct RankSlot {
  config::DeviceId device;
  size_t replica = 0;
  size_t stage = 0;
  int64_t tp_rank = 0;
  int64_t tp = 1;
  config::LayerRange layers;
};

std::vector<RankSlot> rank_slots(const config::JobConfig& c) {
  std::vector<RankSlot> slots;
  for (size_t r = 0; r < c.parallel.replicas.size(); ++r) {
    const auto& replica = c.parallel.replicas[r];
    for (size_t s = 0; s < replica.stages.size(); ++s) {
      const auto& stage = replica.stages[s];
      for (size_t t = 0; t < stage.devices.size(); ++t) {
        slots.push_back({stage.devices[t], r, s, static_cast<int64_t>(t), stage.tp(), stage.layers});
      }
    }
  }
  return slots;
}

}  // namespace

int run_train(const TrainOptions& options) {
  MpiSession mpi(nullptr, nullptr);
  init_logging({mpi.rank(), options.log_level, "", true});

  config::LoadedConfig loaded = load_job(options);
  const config::JobConfig& c = loaded.config;
  ops::set_num_threads(static_cast<int>(c.training.threads));
  const std::vector<RankSlot> slots = rank_slots(c);
  const int64_t needed = static_cast<int64_t>(slots.size());
  const bool single_process_dry_run = options.dry_run && mpi.world_size() == 1;
  if (mpi.world_size() != needed && !single_process_dry_run) {
    HT_USAGE_ERROR("launched {} rank(s), but the [parallel] groups of {} name {} device(s): start one rank per "
                   "device, e.g. mpirun -np {} hetu train {} (or srun -n {})",
                   mpi.world_size(), c.source, needed, needed, c.source, needed);
  }

  if (!options.dry_run) {
    const std::string log_file = c.job.out_dir + "/logs/rank-" + std::to_string(mpi.rank()) + ".log";
    init_logging({mpi.rank(), options.log_level, log_file, true});
    if (mpi.rank() == 0) write_file_atomic(c.job.out_dir + "/config.resolved.toml", config::to_toml(c));
  }

  spdlog::info("hetu {} | job '{}' from {}", build_info().version, c.job.name, c.source);
  const std::string summary = config::describe(c);
  for (std::string_view line : split(summary, '\n')) {
    if (!line.empty()) spdlog::info("{}", line);
  }
  for (const std::string& warning : loaded.warnings) spdlog::warn("{}", warning);
  if (single_process_dry_run && needed != 1) {
    spdlog::info("dry run in one process: a real run needs {} ranks (mpirun -np {})", needed, needed);
  }
  for (int64_t rank = 0; rank < needed; ++rank) {
    const RankSlot& slot = slots[static_cast<size_t>(rank)];
    spdlog::info("rank {} -> {} (replica {}, stage {}, tp rank {}/{}, layers {})", rank, slot.device.str(), slot.replica,
                 slot.stage, slot.tp_rank, slot.tp, config::format_layer_range(slot.layers));
  }
  if (options.dry_run) {
    spdlog::info("dry run: the job is valid; nothing was trained or written");
    return 0;
  }
  spdlog::info("run folder {} prepared (config.resolved.toml, logs/)", c.job.out_dir);
  HT_THROW("hetu train: the training loop is not built yet (models and the tensor library land in later "
           "issues); use --dry-run to validate a job");
}

}  // namespace hetu::app
