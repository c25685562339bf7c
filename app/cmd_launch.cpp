// `hetu launch --np N [--min-np M] [--max-restarts K] [--launcher mpirun|srun] JOB [train
// options]`: the supervisor of lib/launch/supervisor.h over the job file, logging to the
// console and out_dir/logs/launch.log.
#include "app/commands.h"
#include "lib/launch/supervisor.h"
#include "lib/util/logging.h"

namespace hetu::app {

int run_launch(const LaunchOptions& options) {
  launch::SupervisorOptions supervisor = options.supervisor;
  supervisor.config_path = options.config_path;
  supervisor.overrides = options.overrides;
  launch::check_supervisor_options(supervisor);
  const config::LoadedConfig loaded = load_job(options);
  launch::check_supervisor_job(supervisor, loaded.config);
  init_logging({0, options.log_level, loaded.config.job.out_dir + "/logs/launch.log", true});
  launch::forward_stop_signals();
  return launch::supervise(supervisor, loaded.config);
}

}  // namespace hetu::app
