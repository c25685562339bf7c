// MFU: the CPU peak it divides by, and how it is shown. On CPUs the peak is measured (an
// OpenBLAS sgemm probe, the best of several runs at the rank's thread count) and cached per
// CPU model and thread count; a cached value is used only if it was probed after the binary
// was built and not under load (Note [Peak cache rules]). MFU is shown capped at 100%; a
// higher value means the peak is wrong, which is said once.
//
//   PeakContext ctx{cpu_model(), threads, build_time, cpus};
//   double peak = cpu_peak_flops(cache_path, ctx);   // probes only when the cache is unusable
//   m.mfu = shown_mfu(tokens_per_s * flops_per_token / peak);
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace hetu::runtime {

struct PeakRecord {
  std::string cpu_model;
  int64_t threads = 0;
  double flops = 0;
  int64_t probed_at = 0;  // Unix seconds
  bool loaded = false;    // other work held the cores while probing
};

struct PeakContext {
  std::string cpu_model;
  int64_t threads = 1;
  int64_t build_time = 0;  // Unix seconds of the binary's build (its modification time)
  int64_t cpus = 1;        // online CPUs
};

// Empty when the record may be used, else why not ("probed before the build", ...).
std::string peak_record_problem(const PeakRecord& record, const PeakContext& context);
std::string format_peak_record(const PeakRecord& record);
std::optional<PeakRecord> parse_peak_record(std::string_view text);
// Under load: the processes runnable besides the prober and its threads need more than the CPUs.
bool under_load(int64_t runnable_others, int64_t threads, int64_t cpus);

// The cache file's peak, or a new probe (best of `probes` runs of `probe(seconds)`) written
// back to it; a previous value of the same CPU and build that is higher is kept (a peak is a
// maximum). `runnable_others` reads the other runnable processes (from /proc/loadavg).
double cpu_peak_flops(const std::string& cache_path, const PeakContext& context,
                      const std::function<double(double)>& probe, const std::function<int64_t()>& runnable_others,
                      int probes = 5, double seconds_each = 0.1);
// /proc/loadavg's runnable count minus this process; the CPU model from /proc/cpuinfo.
int64_t runnable_other_processes();
std::string cpu_model_name();

// min(mfu, 1); the first value above 1 logs a warning that the peak is too low.
double shown_mfu(double mfu);

}  // namespace hetu::runtime
