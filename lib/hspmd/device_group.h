// DeviceGroup: an ordered list of distinct device ids. Index i of the group is the device
// index a DistState maps to shard coordinates, so {0,1} and {1,0} are different groups.
// Device ids are global ranks (the communicator maps them to processes/GPUs).
//
//   DeviceGroup tp({4, 5});       // tp.at(1) == 5, tp.index_of(5) == 1, tp.to_string() == "{4,5}"
//   DeviceGroup::range(0, 4);     // {0,1,2,3}
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hetu {

using DeviceId = int;

class DeviceGroup {
 public:
  DeviceGroup() = default;
  // Throws when an id is negative or repeated.
  explicit DeviceGroup(std::vector<DeviceId> devices);
  static DeviceGroup range(DeviceId first, int64_t count);

  int64_t size() const { return static_cast<int64_t>(devices_.size()); }
  bool empty() const { return devices_.empty(); }
  DeviceId at(int64_t index) const;
  const std::vector<DeviceId>& devices() const { return devices_; }
  bool contains(DeviceId device) const { return index_of(device).has_value(); }
  std::optional<int64_t> index_of(DeviceId device) const;
  std::string to_string() const;  // "{0,1,4}"

  bool operator==(const DeviceGroup&) const = default;

 private:
  std::vector<DeviceId> devices_;
};

bool disjoint(const DeviceGroup& a, const DeviceGroup& b);
// Same devices, in any order.
bool same_devices(const DeviceGroup& a, const DeviceGroup& b);

}  // namespace hetu
