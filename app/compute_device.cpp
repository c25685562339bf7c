// Rank -> compute device, and precision -> dtype.
#include "app/compute_device.h"

#include "lib/core/cuda_runtime.h"
#include "lib/util/error.h"

namespace hetu::app {

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
  if constexpr (!cuda::kBuilt) {
    HT_USAGE_ERROR("device {} is a GPU, but this hetu was built without CUDA (configure with -DHETU_CUDA=ON)",
                   device.str());
  }
  if (!cuda::is_available()) {
    HT_USAGE_ERROR("device {} is a GPU, but this rank sees no usable CUDA device: {}", device.str(),
                   cuda::unavailable_reason());
  }
  const int visible = cuda::device_count();
  if (device.index < visible) return Device::cuda(static_cast<int>(device.index));
  if (visible == 1) return Device::cuda(0);  // one GPU per rank (CUDA_VISIBLE_DEVICES)
  HT_USAGE_ERROR("device {} is GPU {} of its node, but this rank sees {} CUDA devices (check CUDA_VISIBLE_DEVICES "
                 "and the node's devices.count)", device.str(), device.index, visible);
}

DType compute_dtype(config::Precision precision) {
  switch (precision) {
    case config::Precision::fp32: return DType::f32;
    case config::Precision::bf16: return DType::bf16;
    case config::Precision::fp64: return DType::f64;
  }
  return DType::f32;
}

}  // namespace hetu::app
