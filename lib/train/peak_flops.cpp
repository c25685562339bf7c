// device_peak_flops (peak_flops.h): the catalogue's figure or the cached sgemm probe.
#include "lib/train/peak_flops.h"

#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "lib/config/compute_device.h"
#include "lib/ops/cpu/gemm_choice.h"
#include "lib/ops/ops.h"
#include "lib/runtime/mfu.h"

namespace hetu::train {

double device_peak_flops(const config::LoadedConfig& loaded, const config::DeviceId& device) {
  const config::JobConfig& c = loaded.config;
  const config::DeviceProfile* profile = config::device_profile(loaded, device);
  if (profile != nullptr && profile->kind == config::DeviceKind::gpu) {
    return 1e12 * config::peak_tflops(*profile, c.training.precision);
  }
  const config::DeviceProfile* builtin = profile != nullptr ? config::DeviceCatalog::builtin().find(profile->name) : nullptr;
  if (profile != nullptr && profile->peak_tflops_fp32 > 0 &&
      (builtin == nullptr || builtin->peak_tflops_fp32 != profile->peak_tflops_fp32)) {
    return 1e12 * profile->peak_tflops_fp32;
  }
  spdlog::info("CPU GEMM: {}", ops::cpu::gemm_choice_summary());
  const char* home = std::getenv("HOME");
  const std::string cache = fmt::format("{}/.cache/hetu/sgemm-peak-{}t.txt", home ? home : "/tmp", ops::num_threads());
  std::error_code ec;
  const auto built = std::filesystem::last_write_time("/proc/self/exe", ec);
  const int64_t build_time = ec ? 0 : std::chrono::duration_cast<std::chrono::seconds>(
      std::chrono::file_clock::to_sys(built).time_since_epoch()).count();
  const runtime::PeakContext context{runtime::cpu_model_name(), ops::num_threads(), build_time,
                                     static_cast<int64_t>(std::thread::hardware_concurrency())};
  return runtime::cpu_peak_flops(cache, context, [](double s) { return ops::measure_sgemm_flops(s); },
                                 runtime::runnable_other_processes);
}

}  // namespace hetu::train
