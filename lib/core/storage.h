// Storage: reference-counted bytes on one device, from an Allocator (64-byte aligned on
// CPU, optionally capped: set_cpu_memory_limit) or wrapped around memory the caller owns (from_blob). Tensors and their views share
// one Storage through std::shared_ptr.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "lib/core/device.h"

namespace hetu {

class Allocator {
 public:
  virtual ~Allocator() = default;
  // `device` is of the allocator's type (the CUDA allocator keeps one pool per GPU).
  virtual void* allocate(size_t nbytes, Device device) = 0;
  virtual void deallocate(void* ptr, size_t nbytes, Device device) = 0;
};

// The allocator for a device type: the CPU one, and in CUDA builds the caching allocator of
// lib/core/cuda/allocator.cpp. Throws "no allocator for device cuda:0" when there is none.
Allocator* allocator_for(Device device);
void register_allocator(DeviceType type, Allocator* allocator);

inline constexpr size_t kCpuAlignment = 64;

// Tensor memory of the CPU allocator: bytes in live CPU storages (rounded to the alignment),
// their peak since the limit was last set, and the limit (0: none).
struct CpuMemoryUsage {
  size_t in_use = 0;
  size_t peak = 0;
  size_t limit = 0;
};
// Caps the CPU allocator's tensor memory at `limit` bytes (0: no cap) and restarts the peak: an
// allocation past it throws "out of memory on <device>: ..." (a device's catalogue memory_gib,
// enforced on CPUs so that memory limits can be rehearsed). `device` names the device in it.
void set_cpu_memory_limit(size_t limit, const std::string& device);
CpuMemoryUsage cpu_memory_usage();
// Restarts the peak at what is in use now (to measure the peak of one piece of work).
void reset_cpu_peak_memory();

class Storage {
 public:
  static std::shared_ptr<Storage> allocate(size_t nbytes, Device device);
  // Wraps external memory; `release` (may be empty) runs when the last tensor lets go.
  static std::shared_ptr<Storage> wrap(void* data, size_t nbytes, Device device, std::function<void(void*)> release);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

 private:
  Storage(void* data, size_t nbytes, Device device) : data_(data), nbytes_(nbytes), device_(device) {}
  void* data_;
  size_t nbytes_;
  Device device_;
  Allocator* allocator_ = nullptr;         // owning storage
  std::function<void(void*)> release_;     // wrapped storage
};

}  // namespace hetu
