// Builtin device types (vendor datasheet peaks, dense, no sparsity) and catalogue lookup.
#include "lib/config/device_catalog.h"

#include <algorithm>

namespace hetu::config {

std::string_view to_string(DeviceKind kind) { return kind == DeviceKind::cpu ? "cpu" : "gpu"; }

DeviceCatalog DeviceCatalog::builtin() {
  DeviceCatalog catalog;
  // fp16: dense tensor-core fp16 with fp32 accumulate; the bf16 figure where the type has bf16
  // (the same tensor cores), T4 (Turing, no bf16) 65 per its datasheet; the CPU has none (0:
  // precision = "fp16" on CPU ranks runs the f16-storage kernels, for tests).
  //           name          kind              bf16    fp32   memory GiB  bandwidth GB/s  fp16
  catalog.add({"cpu",        DeviceKind::cpu,   0.0,    0.2,   0,          20,             0.0});
  catalog.add({"T4",         DeviceKind::gpu,   0.0,    8.1,   16,         320,            65.0});
  catalog.add({"A10",        DeviceKind::gpu,   125.0,  31.2,  24,         600,            125.0});
  catalog.add({"RTX-4090",   DeviceKind::gpu,   165.2,  82.6,  24,         1008,           165.2});
  catalog.add({"L40S",       DeviceKind::gpu,   362.0,  91.6,  48,         864,            362.0});
  catalog.add({"A100-40G",   DeviceKind::gpu,   312.0,  19.5,  40,         1555,           312.0});
  catalog.add({"A100-80G",   DeviceKind::gpu,   312.0,  19.5,  80,         2039,           312.0});
  catalog.add({"H100-PCIe",  DeviceKind::gpu,   756.0,  51.2,  80,         2000,           756.0});
  catalog.add({"H100-80G",   DeviceKind::gpu,   989.0,  67.0,  80,         3350,           989.0});
  catalog.add({"H200-141G",  DeviceKind::gpu,   989.0,  67.0,  141,        4800,           989.0});
  return catalog;
}

void DeviceCatalog::add(DeviceProfile type) {
  auto it = std::find_if(types_.begin(), types_.end(),
                         [&](const DeviceProfile& t) { return t.name == type.name; });
  if (it != types_.end()) {
    *it = std::move(type);
  } else {
    types_.push_back(std::move(type));
  }
}

const DeviceProfile* DeviceCatalog::find(std::string_view name) const {
  for (const DeviceProfile& type : types_) {
    if (type.name == name) return &type;
  }
  return nullptr;
}

std::vector<std::string> DeviceCatalog::names() const {
  std::vector<std::string> names;
  for (const DeviceProfile& type : types_) names.push_back(type.name);
  return names;
}

}  // namespace hetu::config
