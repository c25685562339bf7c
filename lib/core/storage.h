// Storage: reference-counted bytes on one device, from an Allocator (64-byte aligned on
// CPU) or wrapped around memory the caller owns (from_blob). Tensors and their views share
// one Storage through std::shared_ptr.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

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

// Host tensor memory of this process (the CPU allocator; bytes rounded to kCpuAlignment):
// held by live storages now, and the most held at once since the last reset. The CPU
// counterpart of cuda::memory_stats; wrapped (from_blob) memory is not counted.
struct HostMemoryStats {
  size_t allocated = 0;
  size_t peak_allocated = 0;
};
HostMemoryStats host_memory_stats();
void reset_host_peak_memory();

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
