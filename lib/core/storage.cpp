// Storage and the CPU allocator (64-byte aligned so SIMD loads never split cache lines;
// counts its tensor memory and refuses allocations past an optional limit).
#include "lib/core/storage.h"

#include <fmt/core.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>

#include "lib/core/cuda_runtime.h"
#include "lib/core/storage_pool.h"
#include "lib/util/error.h"

namespace hetu::cuda {
Allocator* cuda_allocator();  // lib/core/cuda/allocator.cpp (CUDA builds only)
}  // namespace hetu::cuda

namespace hetu {
namespace {

// Note [CPU caching allocator]: a training step allocates the same tensor sizes every step.
// Returning large blocks to glibc unmaps them, and the next step faults every page back in
// (the kernel zeroes each one): 16% of a small GPT-2's step went to page faults. Blocks of
// at least kCacheMin bytes therefore come from a BlockPool (storage_pool.h), which keeps freed
// blocks and hands them out again, split or merged, for requests of any size: a strategy
// switch frees the old layout's tensors while it allocates the new layout's, of other sizes,
// and on a virtual machine a fresh page costs over 10x writing it again (GPT-2 124M dp=4 -> tp=2 x
// pp=2 spent most of its switch in first-touch faults). The pool keeps at most
// kCacheMaxBytes free (beyond that, a segment freed whole goes back to the system).
class CpuAllocator final : public Allocator {
 public:
  static constexpr size_t kCacheMin = size_t{64} << 10;
  static constexpr size_t kCacheMaxBytes = size_t{4} << 30;

  void* allocate(size_t nbytes, Device) override {
    const size_t rounded = round_up(nbytes);
    reserve(nbytes, rounded);
    void* ptr = nullptr;
    if (rounded >= kCacheMin) {
      std::lock_guard<std::mutex> lock(mutex_);
      ptr = pool_.allocate(rounded);
    } else {
      ptr = std::aligned_alloc(kCpuAlignment, rounded);
    }
    if (ptr == nullptr) {
      in_use_ -= rounded;
      HT_THROW("out of host memory allocating {} bytes", nbytes);
    }
    return ptr;
  }

  void deallocate(void* ptr, size_t nbytes, Device) override {
    const size_t rounded = round_up(nbytes);
    in_use_ -= rounded;
    if (rounded >= kCacheMin) {
      std::lock_guard<std::mutex> lock(mutex_);
      pool_.deallocate(ptr);
      return;
    }
    std::free(ptr);
  }

  void set_limit(size_t limit, const std::string& device) {
    std::lock_guard<std::mutex> lock(mutex_);
    limit_ = limit;
    device_ = device;
    peak_ = in_use_.load();
  }

  CpuMemoryUsage usage() const { return {in_use_.load(), peak_.load(), limit_.load()}; }

  void reset_peak() { peak_ = in_use_.load(); }

 private:
  static size_t round_up(size_t nbytes) {
    return (std::max<size_t>(nbytes, 1) + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
  }
  // Counts `rounded` bytes in use, or throws when that passes the limit.
  void reserve(size_t nbytes, size_t rounded) {
    const size_t now = in_use_.fetch_add(rounded) + rounded;
    const size_t limit = limit_.load();
    if (limit != 0 && now > limit) {
      in_use_ -= rounded;
      std::string device;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        device = device_;
      }
      HT_THROW("out of memory on {}: allocating {} with {} in use would pass its {} limit", device, gib(nbytes),
               gib(now - rounded), gib(limit));
    }
    size_t peak = peak_.load();
    while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
    }
  }
  static std::string gib(size_t bytes) { return fmt::format("{:.3f} GiB", static_cast<double>(bytes) / (1 << 30)); }

  std::mutex mutex_;
  BlockPool pool_{kCpuAlignment, kCacheMin, kCacheMaxBytes};  // guarded by mutex_
  std::atomic<size_t> in_use_{0};
  std::atomic<size_t> peak_{0};
  std::atomic<size_t> limit_{0};
  std::string device_;  // guarded by mutex_
};

CpuAllocator& cpu_allocator() {
  static CpuAllocator cpu;
  return cpu;
}

std::array<Allocator*, 2>& allocators() {
  static std::array<Allocator*, 2> table = [] {
    std::array<Allocator*, 2> t = {&cpu_allocator(), nullptr};
    if constexpr (cuda::kBuilt) t[1] = cuda::cuda_allocator();
    return t;
  }();
  return table;
}

}  // namespace

void reset_cpu_peak_memory() { cpu_allocator().reset_peak(); }

Allocator* allocator_for(Device device) {
  Allocator* allocator = allocators()[static_cast<size_t>(device.type)];
  HT_CHECK(allocator != nullptr, "no allocator for device {} (built without that backend?)", device.str());
  return allocator;
}

void set_cpu_memory_limit(size_t limit, const std::string& device) { cpu_allocator().set_limit(limit, device); }

CpuMemoryUsage cpu_memory_usage() { return cpu_allocator().usage(); }

void register_allocator(DeviceType type, Allocator* allocator) { allocators()[static_cast<size_t>(type)] = allocator; }

std::shared_ptr<Storage> Storage::allocate(size_t nbytes, Device device) {
  Allocator* allocator = allocator_for(device);
  std::shared_ptr<Storage> storage(new Storage(allocator->allocate(nbytes, device), nbytes, device));
  storage->allocator_ = allocator;
  return storage;
}

std::shared_ptr<Storage> Storage::wrap(void* data, size_t nbytes, Device device, std::function<void(void*)> release) {
  std::shared_ptr<Storage> storage(new Storage(data, nbytes, device));
  storage->release_ = std::move(release);
  return storage;
}

Storage::~Storage() {
  if (allocator_ != nullptr) {
    allocator_->deallocate(data_, nbytes_, device_);
  } else if (release_) {
    release_(data_);
  }
}

}  // namespace hetu
