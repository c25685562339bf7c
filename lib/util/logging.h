// Rank-aware logging on top of spdlog. init_logging() installs the default logger:
// rank 0 prints to the console, every rank (errors of other ranks too) may also write a
// file such as out_dir/logs/rank-3.log. Log with spdlog::info(...) etc. in .cpp files;
// this header stays free of spdlog so it is cheap to include.
#pragma once

#include <string>
#include <string_view>

namespace hetu {

enum class LogLevel { trace, debug, info, warn, error, off };

// Parses "trace|debug|info|warn|error|off"; throws UsageError naming the flag otherwise.
LogLevel parse_log_level(std::string_view text);
std::string_view to_string(LogLevel level);

struct LogOptions {
  int rank = 0;
  LogLevel level = LogLevel::info;
  std::string file;      // empty: no file sink; appended to, never truncated
  bool console = true;   // rank 0 prints everything at `level`; other ranks print errors only
};

// Replaces the default logger. Safe to call again (e.g. once out_dir is known).
void init_logging(const LogOptions& options);

}  // namespace hetu
