// Rank -> compute device, and precision -> dtype.
#include "lib/config/compute_device.h"

#include <fmt/core.h>

#include "lib/core/cuda_runtime.h"
#include "lib/util/error.h"

namespace hetu::config {

const DeviceProfile* device_profile(const config::LoadedConfig& loaded, const config::DeviceId& device) {
  for (const config::NodeSection& node : loaded.config.cluster.nodes) {
    if (node.host == device.host) return loaded.catalog.find(node.device_type);
  }
  return nullptr;
}

bool is_gpu_device(const config::LoadedConfig& loaded, const config::DeviceId& device) {
  const DeviceProfile* profile = device_profile(loaded, device);
  return profile != nullptr && profile->kind == DeviceKind::gpu;
}

Device compute_device(const config::LoadedConfig& loaded, const config::DeviceId& device) {
  if (!is_gpu_device(loaded, device)) return Device::cpu();
  const int visible = cuda::kBuilt && cuda::is_available() ? cuda::device_count() : 0;
  // One GPU per rank (CUDA_VISIBLE_DEVICES, --gpus-per-task=1): the rank's GPU is device 0.
  const Device gpu = Device::cuda(visible == 1 ? 0 : static_cast<int>(device.index));
  const std::string problem = cuda_device_problem(gpu);
  HT_USAGE_CHECK(problem.empty(), "device {} is a GPU, but this rank cannot use {}: {} (check the CUDA build, "
                 "CUDA_VISIBLE_DEVICES and the node's devices.count)", device.str(), gpu.str(), problem);
  return gpu;
}

std::string cuda_device_problem(Device device) {
  if (!device.is_cuda()) return "";
  if (!cuda::kBuilt || !cuda::is_available()) return cuda::unavailable_reason();
  const int visible = cuda::device_count();
  if (device.index >= visible) return fmt::format("{} is not among the {} visible device(s)", device.str(), visible);
  return "";
}

double peak_tflops(const DeviceProfile& type, config::Precision precision) {
  switch (precision) {
    case config::Precision::bf16: return type.peak_tflops_bf16;
    case config::Precision::fp16: return type.peak_tflops_fp16;
    default: return type.peak_tflops_fp32;
  }
}

DType compute_dtype(config::Precision precision) {
  switch (precision) {
    case config::Precision::fp32: return DType::f32;
    case config::Precision::bf16: return DType::bf16;
    case config::Precision::fp64: return DType::f64;
    case config::Precision::fp16: return DType::f16;
  }
  return DType::f32;
}

}  // namespace hetu::config
