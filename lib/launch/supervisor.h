// The supervisor behind `hetu launch`: one plain process, not an MPI rank, that runs
// `hetu train JOB` under the launcher with N ranks and watches it. When a rank dies (the launcher names it on
// stderr: launch_failure.h), it removes that rank's device from the cluster, re-plans the
// layout for the survivors (launch_job.h, written to out_dir/launch/attempt-K.toml) and
// relaunches, resuming from the newest state: every rank keeps its state of the last step in
// /dev/shm/hetu-<run id>/attempt-K/rank-R (--state-dir; lib/checkpoint/recovery_store.h), so a
// relaunch loses at most one step when every box survives on some rank, and otherwise
// resumes from the durable checkpoint. A failure during recovery is handled the same way
// down to --min-np ranks; one that names no rank runs the same ranks once more.
// SIGINT/SIGTERM/SIGUSR1 go on to the launcher and end the
// supervision. A relaunch places its ranks on the hosts the derived job names (block
// placement; placement_args); under srun it ends a failed step at once and spans a
// heterogeneous job's components (launch_srun.h). A job that switches strategies loses them
// with the device (launch_job.h). It logs through spdlog (hetu launch: the console and
// out_dir/logs/launch.log).
//
//   check_supervisor_options(options);                 // UsageErrors before anything runs
//   check_supervisor_job(options, loaded.config);
//   forward_stop_signals();
//   return supervise(options, loaded.config);            // 0 once an attempt finished
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <map>

#include "lib/config/job_config.h"
#include "lib/launch/launch_srun.h"

namespace hetu::launch {

struct SupervisorOptions {
  std::string config_path;             // the job file the first attempt runs
  std::vector<std::string> overrides;  // its --set table.key=value words (without "--set")
  int64_t np = 0;                      // ranks of the first attempt
  int64_t min_np = 1;                  // fewest ranks a relaunch may run on
  int64_t max_restarts = 3;
  std::string launcher = "mpirun";     // mpirun | srun
  std::string launcher_args;           // extra launcher words (split at spaces)
  int64_t stop_at_step = 0;            // passed on to hetu train
  std::string log_level_flag = "info"; // passed on to hetu train
  double finish_grace_s = 30;          // how long the launcher may take to exit after the run finished
};

// UsageError unless the launcher is mpirun or srun and 1 <= min_np <= np.
void check_supervisor_options(const SupervisorOptions& options);
// UsageError unless np is the number of devices the job's groups name.
void check_supervisor_job(const SupervisorOptions& options, const config::JobConfig& job);

// A relaunch's ranks on the hosts its job gives them (rank_hosts; none: the launcher's own
// placement): mpirun --host a:3,b:4; srun --distribution=arbitrary over a host file, one line
// per rank, written to `hostfile` and named in SLURM_HOSTFILE (added to `env`).
std::vector<std::string> placement_args(const SupervisorOptions& o, const std::vector<std::string>& hosts,
                                        const std::string& hostfile, std::map<std::string, std::string>& env);

// The launcher's command line running `train` (hetu train and its arguments): mpirun -np N,
// or srun -n N --kill-on-bad-exit=0 (launch_srun.h), with `placement` and --launcher-args;
// under srun one component per entry of `het` in a heterogeneous job.
std::vector<std::string> launcher_argv(const SupervisorOptions& o, int64_t np, const std::vector<std::string>& placement,
                                       const std::vector<HetGroupTasks>& het, const std::vector<std::string>& train);

// SIGINT, SIGTERM and SIGUSR1 go on to the running launcher and end the supervision.
void forward_stop_signals();

// Runs and relaunches `job` until an attempt finishes (0), a failure cannot be recovered
// (the failed rank's code, 1 when too few ranks would be left or restarts ran out, 2 for a
// usage error) or a stop signal arrives (the launcher's exit code).
int supervise(const SupervisorOptions& options, config::JobConfig job);

}  // namespace hetu::launch
