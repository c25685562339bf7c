// probe_cuda() for CUDA builds: cudart/driver/cuBLAS versions and the visible devices.
// Runs on machines without a GPU or driver: cudaGetDeviceCount then returns an error
// (cudaErrorInsufficientDriver / cudaErrorNoDevice) that we report instead of failing.
// See Note [CUDA in CI] in cmake/HetuCuda.cmake. No TOML++/spdlog/fmt here (nvcc limits).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "lib/core/cuda_probe.h"

namespace hetu {

CudaProbe probe_cuda() {
  CudaProbe probe;
  probe.compiled = true;
  cudaRuntimeGetVersion(&probe.runtime_version);
  if (cudaDriverGetVersion(&probe.driver_version) != cudaSuccess) probe.driver_version = 0;
  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS) {
    probe.cublas_version = major * 10000 + minor * 100 + patch;
  }
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    probe.error = std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return probe;
  }
  if (count == 0) probe.error = "no CUDA device visible";
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    CudaDeviceInfo info;
    info.index = i;
    info.name = prop.name;
    info.cc_major = prop.major;
    info.cc_minor = prop.minor;
    info.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
    info.sm_count = prop.multiProcessorCount;
    probe.devices.push_back(info);
  }
  return probe;
}

}  // namespace hetu
