// The job hetu launch relaunches after a rank died: the same job with that rank's device
// removed from [cluster] and its layout re-planned for the survivors at launch
// ([parallel] auto = true, from the profile the first attempt measured when there is one),
// resuming from the newest state (checkpoint.resume = "auto"). Rank r is taken to drive
// the r-th device of the cluster in node order (the rank map under rehearse, and the block
// placement mpirun and srun use by default).
//
// A job whose layouts name devices ([[parallel.strategy]], [[parallel.switch]], explicit
// groups) cannot keep them once a device is gone: the relaunch drops its strategies and
// switches with the rest of its layout and trains the re-planned layout for the rest of the
// run (any layout trains the same model, so the losses do not change; the switches after the
// failure are not made). dropped_layout_note says what went, for the supervisor's log.
//
//   config::JobConfig next = job_without_device(c, /*rank=*/2, out_dir + "/profile.toml");
//   write_file_atomic(out_dir + "/launch/attempt-2.toml", config::to_toml(next));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/config/config.h"

namespace hetu::launch {

// `profile`: a hetu profile file for [parallel] profile when the job names none (empty: keep).
// UsageError when `rank` is not a device of its cluster.
config::JobConfig job_without_device(const config::JobConfig& c, int64_t rank, const std::string& profile);

// What job_without_device drops of `c` beyond its groups: "the 3 [[parallel.strategy]] (a, b,
// c) and the [[parallel.switch]] list (after step 3 to a, ...)"; empty when it has neither.
std::string dropped_layout_note(const config::JobConfig& c);

// The host of each rank, in rank order (block placement over the nodes), for a relaunch to
// place its ranks explicitly (mpirun --host, srun's SLURM_HOSTFILE); empty when the job
// rehearses its cluster or every node is "localhost" (the launcher's own placement fits).
std::vector<std::string> rank_hosts(const config::JobConfig& c);

// Rank `rank`'s snapshot folder under hetu launch (`state_dir` = ROOT/attempt-K, the
// supervisor's --state-dir): state_dir itself, since every node has its own /dev/shm; but
// under [cluster] rehearse, whose nodes share this machine's, ROOT/node-<host>/attempt-K for
// the node of the rank's device (the r-th in node order), so a rank sees only its rehearsed
// node's snapshots and gets the other nodes' boxes over the communicator, as on a real
// cluster (lib/checkpoint/snapshot_exchange.h).
std::string node_state_dir(const config::JobConfig& c, int64_t rank, const std::string& state_dir);

// The file rank 0 of a supervised hetu train writes once its run has ended well (exit 0), so
// the supervisor knows the attempt finished even when the launcher does not return:
// OUT_DIR/launch/attempt-K.finished for `state_dir` = ROOT/attempt-K (on the shared out_dir,
// since rank 0 may run on another node than the supervisor).
std::string finished_marker(const std::string& out_dir, const std::string& state_dir);

}  // namespace hetu::launch
