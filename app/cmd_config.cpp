// `hetu config check [CONFIG] [--set k=v]...`: validate a job file and print the resolved
// config (TOML) on stdout; the summary and any warnings go to stderr.
#include <cstdio>

#include "app/commands.h"
#include "lib/config/config.h"
#include "lib/util/build_info.h"

namespace hetu::app {

config::LoadedConfig load_job(const ConfigOptions& options) {
  if (options.config_path.empty()) {
    return config::load_job_config_text(default_job_toml(), std::string(kDefaultJobName), options.overrides);
  }
  return config::load_job_config(options.config_path, options.overrides);
}

int run_config_check(const ConfigOptions& options) {
  config::LoadedConfig loaded = load_job(options);
  std::fputs(config::to_toml(loaded.config).c_str(), stdout);
  std::fflush(stdout);
  if (options.log_level <= LogLevel::info) {
    std::fprintf(stderr, "%s: OK\n%s", loaded.config.source.c_str(), config::describe(loaded.config).c_str());
  }
  for (const std::string& warning : loaded.warnings) std::fprintf(stderr, "warning: %s\n", warning.c_str());
  return 0;
}

}  // namespace hetu::app
