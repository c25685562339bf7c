// The device catalogue: peak throughput and memory per device type, used for MFU, for
// checking that a layout fits, for emulating slower devices, and (later) by the strategy planner. Builtin entries cover
// common GPUs; a job may extend or override them from a TOML file ([cluster] device_catalog).
//
//   DeviceCatalog catalog = DeviceCatalog::builtin();
//   const DeviceProfile* h100 = catalog.find("H100-80G");   // peak_tflops_bf16 == 989
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hetu::config {

enum class DeviceKind { cpu, gpu };

std::string_view to_string(DeviceKind kind);

struct DeviceProfile {
  std::string name;              // as written in [[cluster.node]] devices.type
  DeviceKind kind = DeviceKind::gpu;
  double peak_tflops_bf16 = 0;   // dense tensor-core peak; 0 when the type has no bf16 path
  double peak_tflops_fp32 = 0;   // dense fp32 (non-TF32) peak
  double memory_gib = 0;         // device memory; 0 for host CPUs (bounded by the node); enforced on CPUs
  double memory_bandwidth_gbs = 0;  // device memory bandwidth, GB/s (the cost model's optimizer step)
  double peak_tflops_fp16 = 0;   // dense tensor-core fp16 peak (fp32 accumulate); 0 when the type has no fp16 path
  // CPU kinds only, >= 1: a rank driving this type sleeps (F - 1) x each piece of its compute,
  // so one machine can rehearse a slower device (see Note [Emulated devices], emulated_comm.h).
  double emulate_slowdown = 1;
  // CPU kinds only: {step, F} pairs, steps increasing: from step `step` (1-based) on, the
  // slowdown is F (a rehearsed device that slows down or recovers during a run).
  std::vector<std::pair<int64_t, double>> emulate_slowdown_schedule = {};
  // CPU kinds only: the slowdown multiplies a rank's CPU time, not its wall time, so ranks that
  // compute at once on too few cores are not slowed further by waiting for one (as [straggler]).
  bool emulate_cpu_time = false;
};

class DeviceCatalog {
 public:
  static DeviceCatalog builtin();

  // Adds a type, replacing one with the same name (so files can correct builtin numbers).
  void add(DeviceProfile type);
  const DeviceProfile* find(std::string_view name) const;  // nullptr when unknown
  std::vector<std::string> names() const;
  const std::vector<DeviceProfile>& types() const { return types_; }

 private:
  std::vector<DeviceProfile> types_;
};

}  // namespace hetu::config
