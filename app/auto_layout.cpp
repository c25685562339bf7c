// Planning a job's layout at launch (`[parallel] auto = true`).
#include "app/auto_layout.h"

#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "app/cluster_profile.h"
#include "app/compute_device.h"
#include "app/device_emulation.h"
#include "app/layout_search.h"
#include "app/profile_file.h"
#include "lib/hspmd/communicator.h"
#include "lib/util/atomic_file.h"
#include "lib/util/error.h"

namespace hetu::app {
namespace {

// The cluster measured on every rank, through the communicators training would use.
Profile profile_here(const config::LoadedConfig& loaded, const RankMap& ranks, int64_t world_size,
                     const std::string& out) {
  std::unique_ptr<Communicator> world = world_size == 1 ? make_local_communicator() : make_mpi_communicator();
  const int64_t rank = world->rank();
  const Device compute = compute_device(loaded, ranks.device_of_rank.at(static_cast<size_t>(rank)));
  std::unique_ptr<Communicator> host = with_emulation(std::move(world), loaded, ranks);
  std::unique_ptr<Communicator> device_comm;
  if (compute.is_cuda()) {
    device_comm = world_size == 1 ? make_local_communicator(compute) : make_nccl_communicator(compute.index);
  }
  Profile profile = profile_cluster(loaded, ranks, device_comm ? *device_comm : *host, *host, compute);
  if (rank == 0 && !out.empty()) {
    write_file_atomic(out, to_toml(profile, fmt::format("# hetu profile of {} measured at launch by [parallel] auto on "
                                                        "{} rank(s); hetu plan --profile reads it\n",
                                                        loaded.config.source, world_size)));
    spdlog::info("parallel.auto: wrote the profile to {}", out);
  }
  return profile;
}

}  // namespace

config::LoadedConfig plan_at_launch(const config::LoadedConfig& loaded, const RankMap& ranks, int64_t world_size,
                                    const std::string& profile_out) {
  const config::ParallelSection& parallel = loaded.config.parallel;
  HT_CHECK(parallel.auto_plan, "plan_at_launch: {} does not set [parallel] auto", loaded.config.source);
  Profile profile;
  if (!parallel.profile.empty()) {
    profile = read_profile_file(parallel.profile);
    spdlog::info("parallel.auto: planning from the profile {}", parallel.profile);
  } else {
    spdlog::info("parallel.auto: profiling the cluster on all {} rank(s) first (no parallel.profile given)", world_size);
    profile = profile_here(loaded, ranks, world_size, profile_out);
    for (const std::string& line : describe_profile(profile)) spdlog::info("profile: {}", line);
  }
  const std::vector<PlannedLayout> ranked = search_layouts(loaded, profile);
  HT_USAGE_CHECK(!ranked.empty() && ranked[0].fits, "parallel.auto: no layout of {} fits the devices' memory "
                 "(hetu plan {} lists the candidates)", loaded.config.source, loaded.config.source);
  const PlannedLayout& best = ranked[0];
  double peak = 0;
  for (const auto& replica : best.estimate.prediction.peak_bytes)
    for (double bytes : replica) peak = std::max(peak, bytes);
  spdlog::info("parallel.auto: chose the best of {} layouts: {} (predicted step {:.4f} s, peak {:.3f} GiB per device)",
               ranked.size(), best.summary, best.estimate.prediction.step_s, peak / double(1 << 30));
  config::LoadedConfig planned = loaded;
  planned.config = best.job;
  return planned;
}

}  // namespace hetu::app
