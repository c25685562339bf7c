// Builtin device types (vendor datasheet peaks, dense, no sparsity) and catalogue lookup.
#include "lib/config/device_catalog.h"

#include <algorithm>

namespace hetu::config {

std::string_view to_string(DeviceKind kind) { return kind == DeviceKind::cpu ? "cpu" : "gpu"; }

DeviceCatalog DeviceCatalog::builtin() {
  DeviceCatalog catalog;
  //           name          kind              bf16    fp32   memory GiB  bandwidth GB/s
  catalog.add({"cpu",        DeviceKind::cpu,   0.0,    0.2,   0,          20});
  catalog.add({"T4",         DeviceKind::gpu,   0.0,    8.1,   16,         320});
  catalog.add({"A10",        DeviceKind::gpu,   125.0,  31.2,  24,         600});
  catalog.add({"RTX-4090",   DeviceKind::gpu,   165.2,  82.6,  24,         1008});
  catalog.add({"L40S",       DeviceKind::gpu,   362.0,  91.6,  48,         864});
  catalog.add({"A100-40G",   DeviceKind::gpu,   312.0,  19.5,  40,         1555});
  catalog.add({"A100-80G",   DeviceKind::gpu,   312.0,  19.5,  80,         2039});
  catalog.add({"H100-PCIe",  DeviceKind::gpu,   756.0,  51.2,  80,         2000});
  catalog.add({"H100-80G",   DeviceKind::gpu,   989.0,  67.0,  80,         3350});
  catalog.add({"H200-141G",  DeviceKind::gpu,   989.0,  67.0,  141,        4800});
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
