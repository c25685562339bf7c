// `hetu train` on one rank: loads nothing itself (the caller passes the loaded job), checks
// the launched ranks against the device groups and maps rank -> device by host and local
// index (lib/launch/rank_map.h). A dry run stops there. Otherwise it locks out_dir, plans the
// layout first with `[parallel] auto = true` (lib/plan/auto_layout.h), writes
// config.resolved.toml, builds this rank's run (rank_run.h) and trains it with the Trainer;
// each [[parallel.switch]] builds the rank's run under the next strategy when the Trainer
// reaches it; `[straggler] enabled = true` re-plans around slow ranks while it trains
// (lib/plan/straggler_plan.h); `[[parallel.bucket]]` runs each step's documents by length
// under several strategies (bucketed_run.h; their lanes' memory checked at launch,
// lib/plan/bucket_memory_check.h), or with `[parallel] auto = true` and documents under
// buckets planned each step (lib/plan/auto_buckets.h). Writes out_dir/{config.resolved.toml,
// metrics.jsonl, logs/, checkpoints/}. SIGTERM/SIGUSR1 end the run after the current step
// with a checkpoint (lib/runtime/stop_request.h). Emulated devices and links
// (lib/emulation/device_emulation.h) wrap the MPI communicator and cap the CPU allocator.
//
//   bool training = false;
//   int code = train_job(load_job_config(path, sets), {.dry_run = false}, mpi, training);
#pragma once

#include <cstdint>
#include <string>

#include "lib/config/config.h"
#include "lib/hspmd/mpi_session.h"
#include "lib/util/logging.h"

namespace hetu::train {

struct TrainJobOptions {
  bool dry_run = false;                // check the job and the ranks, train nothing
  int64_t stop_at_step = 0;            // pause after this step (checkpoint, exit 0); resume continues
  std::string state_dir;               // hetu launch's snapshot folder (lib/checkpoint/recovery_store.h); empty: none
  LogLevel log_level = LogLevel::info;  // of the rank's log file, out_dir/logs/rank-R.log
};

// This rank's part of the job; the exit code (0 when it trained or the dry run passed).
// `training` becomes true where training starts: a UsageError before that (a bad job file, a
// locked out_dir) is the same on every rank.
int train_job(config::LoadedConfig loaded, const TrainJobOptions& options, const MpiSession& mpi, bool& training);

}  // namespace hetu::train
