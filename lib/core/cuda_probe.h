// What the CUDA runtime reports on this machine: library versions and visible devices.
// Works in every build: without the CUDA backend `compiled` is false; with it but no
// usable driver/GPU, `devices` is empty and `error` says why (e.g. "insufficient driver").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hetu {

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  int64_t memory_bytes = 0;
  int sm_count = 0;
};

struct CudaProbe {
  bool compiled = false;     // built with the CUDA backend
  int runtime_version = 0;   // e.g. 13000 for CUDA 13.0
  int driver_version = 0;    // 0 when no driver is installed
  int cublas_version = 0;    // e.g. 130100 for cuBLAS 13.1.0
  std::vector<CudaDeviceInfo> devices;
  std::string error;         // why no device is usable, when devices is empty
};

CudaProbe probe_cuda();

}  // namespace hetu
