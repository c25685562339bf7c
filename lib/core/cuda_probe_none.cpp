// probe_cuda() for builds without the CUDA backend (HETU_CUDA=OFF or no toolkit).
#include "lib/core/cuda_probe.h"

namespace hetu {

CudaProbe probe_cuda() {
  CudaProbe probe;
  probe.error = "hetu was built without the CUDA backend (HETU_CUDA=OFF or no toolkit found)";
  return probe;
}

}  // namespace hetu
