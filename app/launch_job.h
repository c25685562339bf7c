// The job hetu launch relaunches after a rank died: the same job with that rank's device
// removed from [cluster] and its layout re-planned for the survivors at launch
// ([parallel] auto = true, from the profile the first attempt measured when there is one),
// resuming from the newest state (checkpoint.resume = "auto"). Rank r is taken to drive
// the r-th device of the cluster in node order (the rank map under rehearse, and the block
// placement mpirun and srun use by default).
//
//   config::JobConfig next = job_without_device(c, /*rank=*/2, out_dir + "/profile.toml");
//   write_file_atomic(out_dir + "/launch/attempt-2.toml", config::to_toml(next));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "app/config/config.h"

namespace hetu::app {

// `profile`: a hetu profile file for [parallel] profile when the job names none (empty: keep).
// UsageError when the job switches strategies ([[parallel.switch]] names devices) or `rank`
// is not a device of its cluster.
config::JobConfig job_without_device(const config::JobConfig& c, int64_t rank, const std::string& profile);

// The host of each rank, in rank order (block placement over the nodes), for a relaunch to
// place its ranks explicitly (mpirun --host, srun's SLURM_HOSTFILE); empty when the job
// rehearses its cluster or every node is "localhost" (the launcher's own placement fits).
std::vector<std::string> rank_hosts(const config::JobConfig& c);

}  // namespace hetu::app
