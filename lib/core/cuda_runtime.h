// The CUDA device runtime as the rest of hetu sees it: plain C++, usable in every build.
// Device selection, one current stream per device, memory statistics of the caching
// allocator, and cross-device tensor copies. Without the CUDA backend (kBuilt false) every
// query answers "no device" and every action throws; with it but no GPU/driver,
// is_available() is false and unavailable_reason() says why.
//
//   if (cuda::is_available()) { Tensor g = x.to(Device::cuda(0)); ... cuda::memory_stats(0).peak_allocated; }
// See Note [One stream per device] in lib/core/cuda/context.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "lib/core/device.h"

#ifndef HETU_CUDA_BUILT
#define HETU_CUDA_BUILT 0
#endif

namespace hetu {
class Tensor;
}

namespace hetu::cuda {

// True when hetu was compiled with the CUDA backend. Code that calls CUDA-only functions
// guards them with `if constexpr (cuda::kBuilt)`, so CPU-only builds need no stubs for them.
inline constexpr bool kBuilt = HETU_CUDA_BUILT != 0;

bool is_available();               // at least one usable CUDA device
int device_count();                // 0 without driver or device
std::string unavailable_reason();  // empty when available

void set_device(int index);        // this thread's current device
int current_device();
// The stream every hetu kernel, copy and collective on `device` is ordered on (a
// cudaStream_t). Setting another one first synchronises the old one.
void* current_stream(int device);
void set_current_stream(int device, void* stream);
void synchronize(int device);      // waits for the current stream of `device`

// Makes `device` current for its lifetime (no-op for CPU devices).
class DeviceGuard {
 public:
  explicit DeviceGuard(Device device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

// The caching allocator of one device (bytes are rounded block sizes).
struct MemoryStats {
  size_t allocated = 0;        // held by live tensors
  size_t peak_allocated = 0;
  size_t reserved = 0;         // obtained from cudaMalloc (allocated + cached)
  size_t peak_reserved = 0;
  int64_t allocations = 0;     // allocate() calls
  int64_t cuda_mallocs = 0;    // of which reached cudaMalloc
  int64_t cache_flushes = 0;   // times the cache was emptied to retry a failed cudaMalloc
};
MemoryStats memory_stats(int device);
void reset_peak_memory_stats(int device);
void empty_cache(int device);  // returns unused cached segments to the driver

// Copies between tensors of the same shape when at least one is on a CUDA device: host to
// device, device to host, device to device (same or other GPU), with strides, broadcast
// (stride 0) sources and dtype casts. Host <-> device copies of 1 MiB and more go through
// pinned staging buffers. Returns once `dst` may be read by the host (device -> host) or
// `src` may be reused (host -> device).
void copy_tensor(const Tensor& dst, const Tensor& src);
// Writes `value` (converted to dst's dtype) into every element of a CUDA tensor view.
void fill_tensor(const Tensor& dst, double value);

}  // namespace hetu::cuda
