// `hetu profile JOB [--set k=v]... [--out profile.toml]`: the job's model and links measured
// on its cluster (lib/profile/cluster_profile.h). Under mpirun with one rank per device of the
// cluster (`[cluster] rehearse` maps ranks to devices, as in hetu train) every rank measures
// its own device at once, with its emulation (so does one process for a one-device cluster);
// one plain process for a larger cluster measures this CPU once and gives every CPU type
// those times x its emulate_slowdown. Rank 0 writes the
// file (atomically); hetu plan --profile and `[parallel] profile` read it.
#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include <cstdio>

#include "app/commands.h"
#include "lib/emulation/device_emulation.h"
#include "lib/hspmd/mpi_session.h"
#include "lib/ops/ops.h"
#include "lib/profile/cluster_profile.h"
#include "lib/util/atomic_file.h"
#include "lib/util/error.h"

namespace hetu::app {

int run_profile(const ProfileOptions& options) {
  MpiSession mpi(nullptr, nullptr);
  init_logging({mpi.rank(), options.log_level, "", true});
  const config::LoadedConfig loaded = load_job(options);
  const config::JobConfig& c = loaded.config;
  ops::set_num_threads(static_cast<int>(c.training.threads));
  // A world of one profiles its device as a cluster when the cluster is that one device.
  const bool one_process = mpi.world_size() == 1 && c.cluster.num_devices() > 1;
  profile::Profile profile;
  if (one_process) {
    profile = profile::profile_one_process(loaded);
    for (const config::NodeSection& node : c.cluster.nodes) {
      if (loaded.catalog.find(node.device_type)->kind == config::DeviceKind::gpu) {
        spdlog::info("{} ({}): a GPU type, not measured in one process (profile under mpirun, one rank per device; "
                     "hetu plan estimates it from the catalogue)", node.host, node.device_type);
      }
    }
    HT_USAGE_CHECK(!profile.devices.empty(), "hetu profile: {} has no CPU device type to measure in one process "
                   "(start it under mpirun with one rank per device)", c.source);
  } else {
    HT_USAGE_CHECK(mpi.world_size() == c.cluster.num_devices(),
                   "hetu profile: launched {} ranks, but the cluster of {} has {} devices: start one rank per device "
                   "(mpirun -np {} hetu profile {}), or one plain process to profile this CPU",
                   mpi.world_size(), c.source, c.cluster.num_devices(), c.cluster.num_devices(), c.source);
    const launch::RankMap ranks = launch::map_ranks(c, mpi.all_hosts());
    if (mpi.rank() == 0) {
      for (const std::string& line : emulation::describe_emulation(loaded)) spdlog::info("{}", line);
    }
    try {
      profile = profile::profile_launched(loaded, ranks, mpi.world_size());
    } catch (const Error& error) {
      if (mpi.world_size() == 1) throw;
      std::fprintf(stderr, "hetu: error (rank %d): %s [%s]\n", mpi.rank(), error.message().c_str(), error.where().c_str());
      mpi.abort(1, error.message());
    }
  }
  if (mpi.rank() != 0) return 0;
  for (const std::string& line : profile::describe_profile(profile)) spdlog::info("{}", line);
  const std::string how = one_process ? "in one process (this CPU x each type's emulate_slowdown)"
                                      : fmt::format("under mpirun, {} ranks at once", mpi.world_size());
  const std::string header = fmt::format("# hetu profile of {} {}, {} threads per rank; read by hetu plan --profile\n",
                                         c.source, how, ops::num_threads());
  write_file_atomic(options.out, to_toml(profile, header));
  spdlog::info("wrote {}", options.out);
  return 0;
}

}  // namespace hetu::app
