// The CPU peak cache and MFU's cap. See Note [Peak cache rules].
#include "lib/runtime/mfu.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "lib/util/atomic_file.h"
#include "lib/util/strings.h"

namespace hetu::runtime {

// Note [Peak cache rules]: the quickstart once printed "MFU 107.3%" because a single 0.3 s
// probe ran while other work held a core and the low value was cached forever. Now: a probe
// is the best of several short runs; the cache is keyed by CPU model and thread count; it is
// ignored when older than the binary (a new build may have a different BLAS or flags) or
// when its probe ran under load; and MFU is capped at 100% with a warning.
std::string peak_record_problem(const PeakRecord& r, const PeakContext& c) {
  if (r.flops <= 0) return "no value";
  if (r.cpu_model != c.cpu_model) return fmt::format("probed on another CPU ({})", r.cpu_model);
  if (r.threads != c.threads) return fmt::format("probed with {} thread(s)", r.threads);
  if (r.probed_at < c.build_time) return "probed before this build";
  if (r.loaded) return "probed under load";
  return "";
}

std::string format_peak_record(const PeakRecord& r) {
  return fmt::format("cpu_model {}\nthreads {}\nflops {}\nprobed_at {}\nloaded {}\n", r.cpu_model, r.threads, r.flops,
                     r.probed_at, r.loaded ? 1 : 0);
}

std::optional<PeakRecord> parse_peak_record(std::string_view text) {
  PeakRecord r;
  int seen = 0;
  for (std::string_view line : split(text, '\n')) {
    const size_t space = line.find(' ');
    if (space == std::string_view::npos) continue;
    const std::string key(line.substr(0, space)), value(trim(line.substr(space + 1)));
    try {
      if (key == "cpu_model") r.cpu_model = value;
      else if (key == "threads") r.threads = std::stoll(value);
      else if (key == "flops") r.flops = std::stod(value);
      else if (key == "probed_at") r.probed_at = std::stoll(value);
      else if (key == "loaded") r.loaded = value == "1";
      else continue;
    } catch (const std::exception&) {
      return std::nullopt;
    }
    ++seen;
  }
  if (seen != 5) return std::nullopt;
  return r;
}

bool under_load(int64_t runnable_others, int64_t threads, int64_t cpus) { return runnable_others + threads > cpus; }

double cpu_peak_flops(const std::string& cache_path, const PeakContext& context,
                      const std::function<double(double)>& probe, const std::function<int64_t()>& runnable_others,
                      int probes, double seconds_each) {
  std::optional<PeakRecord> cached;
  if (std::ifstream in(cache_path); in) {
    std::stringstream text;
    text << in.rdbuf();
    cached = parse_peak_record(text.str());
  }
  const std::string problem = cached ? peak_record_problem(*cached, context) : "no cached value";
  if (problem.empty()) return cached->flops;
  PeakRecord fresh{context.cpu_model, context.threads, 0, 0, false};
  for (int i = 0; i < probes; ++i) {
    fresh.loaded = fresh.loaded || under_load(runnable_others(), context.threads, context.cpus);
    fresh.flops = std::max(fresh.flops, probe(seconds_each));
  }
  fresh.probed_at = std::chrono::duration_cast<std::chrono::seconds>(
                        std::chrono::system_clock::now().time_since_epoch()).count();
  // A loaded earlier probe of this CPU and build that measured more still bounds the peak.
  if (cached && cached->cpu_model == context.cpu_model && cached->threads == context.threads &&
      cached->probed_at >= context.build_time && cached->flops > fresh.flops) {
    fresh.flops = cached->flops;
  }
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(cache_path).parent_path(), ec);
  if (!ec) write_file_atomic(cache_path, format_peak_record(fresh));
  spdlog::info("CPU peak for MFU: {:.1f} GFLOP/s (best of {} sgemm probes, {} thread(s){}; re-probed: {}; cached in {})",
               fresh.flops / 1e9, probes, context.threads, fresh.loaded ? ", under load" : "", problem, cache_path);
  return fresh.flops;
}

int64_t runnable_other_processes() {
  std::ifstream in("/proc/loadavg");
  double one = 0, five = 0, fifteen = 0;
  std::string running;
  if (!(in >> one >> five >> fifteen >> running)) return 0;
  const size_t slash = running.find('/');
  if (slash == std::string::npos) return 0;
  return std::max<int64_t>(0, std::stoll(running.substr(0, slash)) - 1);
}

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) return std::string(trim(line.substr(line.find(':') + 1)));
  }
  return "cpu";
}

double shown_mfu(double mfu) {
  static std::atomic<bool> warned{false};
  if (mfu > 1.0 && !warned.exchange(true)) {
    spdlog::warn("MFU computes to {:.1f}%: the peak it divides by is too low (a CPU probe under load, or a catalogue "
                 "peak below the device's); showing 100%", 100 * mfu);
  }
  return std::min(mfu, 1.0);
}

}  // namespace hetu::runtime
