// Free device memory for sizing the fused LM head's tiles (linear_cross_entropy.h).
#include "lib/ops/cuda/linear_cross_entropy.h"

#include <cuda_runtime_api.h>

#include "lib/core/cuda/cuda_check.h"
#include "lib/core/cuda_runtime.h"

namespace hetu::ops::cuda {

size_t available_bytes(int device) {
  hetu::cuda::DeviceGuard guard(Device::cuda(device));
  size_t free = 0, total = 0;
  HT_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  const hetu::cuda::MemoryStats stats = hetu::cuda::memory_stats(device);
  return free + (stats.reserved - stats.allocated);
}

}  // namespace hetu::ops::cuda
