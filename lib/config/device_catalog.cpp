// The builtin device types (lib/config/builtin_devices.toml: vendor datasheet peaks, dense, no
// sparsity, sources cited there) and catalogue lookup.
#include "lib/config/device_catalog.h"

#include <algorithm>

#include "lib/config/config_internal.h"

namespace hetu::config {

std::string_view to_string(DeviceKind kind) { return kind == DeviceKind::cpu ? "cpu" : "gpu"; }

DeviceCatalog DeviceCatalog::builtin() {
  static const DeviceCatalog catalog = [] {
    DeviceCatalog c;
    read_device_catalog_text(builtin_devices_toml(), "lib/config/builtin_devices.toml", c);
    return c;
  }();
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
