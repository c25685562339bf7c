// Loading the job file: TOML text + `--set table.key=value` overrides -> a resolved,
// validated JobConfig. Every problem is a hetu::UsageError whose message starts with
// where it is ("job.toml:12: training.steps: ...", "--set optimizer.lr=x: ...").
//
//   LoadedConfig loaded = load_job_config("configs/gpt2-tiny-cpu.toml", {"training.steps=5"});
//   std::cout << to_toml(loaded.config);   // what `hetu config check` prints
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lib/config/device_catalog.h"
#include "lib/config/job_config.h"

namespace hetu::config {

struct LoadedConfig {
  JobConfig config;
  DeviceCatalog catalog;              // builtin, extended by [cluster] device_catalog
  std::vector<std::string> warnings;  // rules that advise rather than forbid
};

// `overrides` are "table.key=value" strings (the --set arguments, without "--set").
LoadedConfig load_job_config(const std::string& path, const std::vector<std::string>& overrides);
// Same, from text in memory; `source_name` is used in messages (tests, embedded defaults).
LoadedConfig load_job_config_text(std::string_view text, const std::string& source_name,
                                  const std::vector<std::string>& overrides);

// The resolved config as a TOML document that loads back to the same JobConfig.
std::string to_toml(const JobConfig& config);

// model.rope_scaling as a TOML inline table ({ type = "llama3", factor = 32.0, ... }).
std::string to_toml(const RopeScaling& scaling);

// One-paragraph human summary: model size, devices, replicas and their stages.
std::string describe(const JobConfig& config);

}  // namespace hetu::config
