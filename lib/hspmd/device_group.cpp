// DeviceGroup: validation, lookup and printing.
#include "lib/hspmd/device_group.h"

#include <algorithm>

#include "lib/util/error.h"

namespace hetu {

DeviceGroup::DeviceGroup(std::vector<DeviceId> devices) : devices_(std::move(devices)) {
  std::vector<DeviceId> sorted = devices_;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    HT_CHECK(sorted[i] >= 0, "DeviceGroup {}: device ids must be >= 0", to_string());
    HT_CHECK(i == 0 || sorted[i] != sorted[i - 1], "DeviceGroup {}: device {} appears twice", to_string(),
             sorted[i]);
  }
}

DeviceGroup DeviceGroup::range(DeviceId first, int64_t count) {
  HT_CHECK(count >= 0, "DeviceGroup::range: count must be >= 0, got {}", count);
  std::vector<DeviceId> devices(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) devices[static_cast<size_t>(i)] = first + static_cast<DeviceId>(i);
  return DeviceGroup(std::move(devices));
}

DeviceId DeviceGroup::at(int64_t index) const {
  HT_CHECK(index >= 0 && index < size(), "DeviceGroup {}: index {} out of range", to_string(), index);
  return devices_[static_cast<size_t>(index)];
}

std::optional<int64_t> DeviceGroup::index_of(DeviceId device) const {
  auto it = std::find(devices_.begin(), devices_.end(), device);
  if (it == devices_.end()) return std::nullopt;
  return static_cast<int64_t>(it - devices_.begin());
}

std::string DeviceGroup::to_string() const {
  std::string out = "{";
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (i > 0) out += ",";
    out += std::to_string(devices_[i]);
  }
  return out + "}";
}

bool disjoint(const DeviceGroup& a, const DeviceGroup& b) {
  return std::none_of(a.devices().begin(), a.devices().end(), [&](DeviceId d) { return b.contains(d); });
}

bool same_devices(const DeviceGroup& a, const DeviceGroup& b) {
  return a.size() == b.size() &&
         std::all_of(a.devices().begin(), a.devices().end(), [&](DeviceId d) { return b.contains(d); });
}

}  // namespace hetu
