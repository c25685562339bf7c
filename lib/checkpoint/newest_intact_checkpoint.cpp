// The newest intact checkpoint of a folder, for resume = "auto" (newest_intact_checkpoint.h).
#include "lib/checkpoint/newest_intact_checkpoint.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

#include "lib/util/error.h"

namespace hetu::checkpoint {
namespace {

// Newest first: what `latest` names (possibly a crash's .old copy), then every step folder
// by falling step. A damaged `latest` pointer is itself skipped with a warning.
std::vector<std::string> candidates(const checkpoint::CheckpointManager& manager) {
  std::vector<std::string> out;
  try {
    if (std::optional<std::string> latest = manager.latest()) out.push_back(*latest);
  } catch (const Error& error) {
    spdlog::warn("resume: ignoring {}/latest ({}); trying the step folders", manager.dir(), error.message());
  }
  std::vector<std::string> steps = manager.list();
  std::reverse(steps.begin(), steps.end());
  for (const std::string& step : steps) {
    if (std::find(out.begin(), out.end(), step) == out.end()) out.push_back(step);
  }
  return out;
}

}  // namespace

std::optional<runtime::Snapshot> load_newest_intact(
    const checkpoint::CheckpointManager& manager, const std::function<runtime::Snapshot(const std::string&)>& load,
    const std::function<bool(bool)>& everywhere) {
  const std::vector<std::string> paths = candidates(manager);
  std::vector<std::string> skipped;
  for (const std::string& path : paths) {
    std::optional<runtime::Snapshot> snapshot;
    std::string problem;
    try {
      snapshot = load(path);
      if (!snapshot->metadata.count(runtime::kDataPositionKey)) {
        problem = fmt::format("{}: no metadata {} (the data position)", path, runtime::kDataPositionKey);
      }
    } catch (const Error& error) {
      problem = error.message();
    } catch (const std::exception& error) {  // anything else: still skip it, on every rank alike
      problem = error.what();
    }
    if (everywhere(problem.empty())) {
      if (!skipped.empty()) spdlog::warn("resume: using {}, the newest intact checkpoint", path);
      return snapshot;
    }
    if (problem.empty()) problem = "damaged on another rank (see its log)";
    spdlog::warn("resume: skipping the damaged checkpoint {}: {}", path, problem);
    skipped.push_back(path + ": " + problem);
  }
  if (skipped.empty()) return std::nullopt;
  HT_USAGE_ERROR("resume = \"auto\": no intact checkpoint in {}:\n  {}\n(set checkpoint.resume = \"never\" to start "
                 "over, or point it at a checkpoint)",
                 manager.dir(), fmt::join(skipped, "\n  "));
}

}  // namespace hetu::checkpoint
