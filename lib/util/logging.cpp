// Installs the rank-aware default spdlog logger (console + optional per-rank file).
#include "lib/util/logging.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <array>
#include <filesystem>
#include <memory>
#include <utility>
#include <vector>

#include "lib/util/error.h"

namespace hetu {
namespace {

constexpr std::array<std::pair<std::string_view, LogLevel>, 6> kLevels = {{
    {"trace", LogLevel::trace},
    {"debug", LogLevel::debug},
    {"info", LogLevel::info},
    {"warn", LogLevel::warn},
    {"error", LogLevel::error},
    {"off", LogLevel::off},
}};

spdlog::level::level_enum to_spdlog(LogLevel level) {
  switch (level) {
    case LogLevel::trace: return spdlog::level::trace;
    case LogLevel::debug: return spdlog::level::debug;
    case LogLevel::info: return spdlog::level::info;
    case LogLevel::warn: return spdlog::level::warn;
    case LogLevel::error: return spdlog::level::err;
    case LogLevel::off: return spdlog::level::off;
  }
  return spdlog::level::info;
}

}  // namespace

LogLevel parse_log_level(std::string_view text) {
  for (const auto& [name, level] : kLevels) {
    if (name == text) return level;
  }
  HT_USAGE_ERROR("--log-level: unknown level '{}' (expected trace, debug, info, warn, error or off)",
                 text);
}

std::string_view to_string(LogLevel level) {
  for (const auto& [name, value] : kLevels) {
    if (value == level) return name;
  }
  return "info";
}

void init_logging(const LogOptions& options) {
  std::vector<spdlog::sink_ptr> sinks;
  const std::string rank_tag = "[rank " + std::to_string(options.rank) + "] ";
  if (options.console) {
    auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    console->set_pattern("[%H:%M:%S.%e] " + rank_tag + "[%^%l%$] %v");
    console->set_level(options.rank == 0 ? to_spdlog(options.level) : spdlog::level::err);
    sinks.push_back(std::move(console));
  }
  if (!options.file.empty()) {
    std::filesystem::path path(options.file);
    if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
    // Appended to: a resumed run continues its rank's log after the earlier runs' lines.
    auto file = std::make_shared<spdlog::sinks::basic_file_sink_mt>(options.file, /*truncate=*/false);
    file->set_pattern("[%Y-%m-%d %H:%M:%S.%e] " + rank_tag + "[%l] %v");
    file->set_level(to_spdlog(options.level));
    sinks.push_back(std::move(file));
  }
  auto logger = std::make_shared<spdlog::logger>("hetu", sinks.begin(), sinks.end());
  logger->set_level(to_spdlog(options.level));
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace hetu
