// Where a tensor lives: the host CPU or one CUDA device ("cpu", "cuda:1").
#pragma once

#include <string>
#include <string_view>

namespace hetu {

enum class DeviceType : uint8_t { cpu, cuda };

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;

  static Device cpu() { return {DeviceType::cpu, 0}; }
  static Device cuda(int index) { return {DeviceType::cuda, index}; }
  // "cpu", "cuda", "cuda:3"; throws UsageError otherwise.
  static Device parse(std::string_view text);

  bool is_cpu() const { return type == DeviceType::cpu; }
  bool is_cuda() const { return type == DeviceType::cuda; }
  std::string str() const;
  bool operator==(const Device&) const = default;
};

}  // namespace hetu
