// The CUDA caching allocator: one pool per device, so a training step that allocates the
// same sizes every step reaches cudaMalloc only in its first step. Host code only (g++).
//
// Note [CUDA caching allocator]: requests are rounded up to 512 bytes. Requests of at most
// 1 MiB come from 2 MiB segments ("small pool"); larger ones from segments of 20 MiB (under
// 10 MiB) or of the request rounded up to 2 MiB ("large pool"). A request takes the smallest
// free block of its pool that fits (best fit) and splits off the rest when at least 512 bytes
// (small) or 1 MiB (large) remain; a freed block merges with free neighbours of its segment.
// When cudaMalloc fails, every segment that is wholly free is returned to the driver and the
// call is retried once; then the error names the request and the pool's statistics. Blocks
// are reused without events: see Note [One stream per device] in context.cpp.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>

#include "lib/core/cuda/cuda_check.h"
#include "lib/core/cuda_runtime.h"
#include "lib/core/storage.h"
#include "lib/util/error.h"

namespace hetu::cuda {
namespace {

constexpr size_t kRound = 512;
constexpr size_t kSmallLimit = size_t{1} << 20;
constexpr size_t kSmallSegment = size_t{2} << 20;
constexpr size_t kMidLimit = size_t{10} << 20;
constexpr size_t kMidSegment = size_t{20} << 20;
constexpr size_t kLargeRound = size_t{2} << 20;
constexpr int kMaxDevices = 64;

struct Block {
  char* ptr = nullptr;
  size_t size = 0;
  bool allocated = false;
  bool small = false;
  Block* prev = nullptr;  // neighbours inside one segment
  Block* next = nullptr;
};

struct BySize {
  bool operator()(const Block* a, const Block* b) const {
    return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
  }
};

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

class DevicePool {
 public:
  explicit DevicePool(int device) : device_(device) {}

  void* allocate(size_t nbytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    const size_t size = round_up(std::max<size_t>(nbytes, 1), kRound);
    const bool small = size <= kSmallLimit;
    auto& pool = small ? small_free_ : large_free_;
    Block key;
    key.size = size;
    auto it = pool.lower_bound(&key);
    Block* block = nullptr;
    if (it != pool.end()) {
      block = *it;
      pool.erase(it);
    } else {
      block = new_segment(size, small, nbytes);
    }
    const size_t rest = block->size - size;
    if (rest >= (small ? kRound : kSmallLimit)) {
      auto* tail = new Block{block->ptr + size, rest, false, small, block, block->next};
      if (block->next != nullptr) block->next->prev = tail;
      block->next = tail;
      block->size = size;
      pool.insert(tail);
    }
    block->allocated = true;
    live_.emplace(block->ptr, block);
    stats_.allocated += block->size;
    stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
    ++stats_.allocations;
    return block->ptr;
  }

  void deallocate(void* ptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(static_cast<char*>(ptr));
    HT_CHECK(it != live_.end(), "cuda allocator: freeing {} which cuda:{} did not allocate", ptr, device_);
    Block* block = it->second;
    live_.erase(it);
    block->allocated = false;
    stats_.allocated -= block->size;
    auto& pool = block->small ? small_free_ : large_free_;
    for (Block* neighbour : {block->prev, block->next}) {
      if (neighbour == nullptr || neighbour->allocated) continue;
      pool.erase(neighbour);
      if (neighbour == block->prev) {
        neighbour->size += block->size;
        neighbour->next = block->next;
        if (block->next != nullptr) block->next->prev = neighbour;
        delete block;
        block = neighbour;
      } else {
        block->size += neighbour->size;
        block->next = neighbour->next;
        if (neighbour->next != nullptr) neighbour->next->prev = block;
        delete neighbour;
      }
    }
    pool.insert(block);
  }

  MemoryStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

  void reset_peak() {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.peak_allocated = stats_.allocated;
    stats_.peak_reserved = stats_.reserved;
  }

  void empty_cache() {
    std::lock_guard<std::mutex> lock(mutex_);
    release_free_segments();
  }

 private:
  Block* new_segment(size_t size, bool small, size_t requested) {
    const size_t segment = small ? kSmallSegment : size < kMidLimit ? kMidSegment : round_up(size, kLargeRound);
    DeviceGuard guard(Device::cuda(device_));
    void* ptr = nullptr;
    cudaError_t status = cudaMalloc(&ptr, segment);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      ++stats_.cache_flushes;
      release_free_segments();
      status = cudaMalloc(&ptr, segment);
    }
    if (status != cudaSuccess) {
      cudaGetLastError();
      size_t free_bytes = 0, total_bytes = 0;
      cudaMemGetInfo(&free_bytes, &total_bytes);
      HT_THROW("cuda:{} out of memory: allocating {} bytes (segment {} bytes) failed with {}; hetu holds {} bytes in "
               "tensors and {} reserved; the device has {} of {} bytes free",
               device_, requested, segment, cudaGetErrorName(status), stats_.allocated, stats_.reserved, free_bytes,
               total_bytes);
    }
    ++stats_.cuda_mallocs;
    stats_.reserved += segment;
    stats_.peak_reserved = std::max(stats_.peak_reserved, stats_.reserved);
    return new Block{static_cast<char*>(ptr), segment, false, small, nullptr, nullptr};
  }

  // Segments with no live block are one free block with no neighbours.
  void release_free_segments() {
    bool synced = false;
    for (auto* pool : {&small_free_, &large_free_}) {
      for (auto it = pool->begin(); it != pool->end();) {
        Block* b = *it;
        if (b->prev != nullptr || b->next != nullptr) {
          ++it;
          continue;
        }
        if (!synced) {
          DeviceGuard guard(Device::cuda(device_));
          HT_CUDA_CHECK(cudaDeviceSynchronize());
          synced = true;
        }
        HT_CUDA_CHECK(cudaFree(b->ptr));
        stats_.reserved -= b->size;
        it = pool->erase(it);
        delete b;
      }
    }
  }

  int device_;
  std::mutex mutex_;
  std::set<Block*, BySize> small_free_, large_free_;
  std::unordered_map<char*, Block*> live_;
  MemoryStats stats_;
};

class CudaAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes, Device device) override { return pool(device.index).allocate(nbytes); }
  void deallocate(void* ptr, size_t, Device device) override { pool(device.index).deallocate(ptr); }

  DevicePool& pool(int device) {
    HT_CHECK(device >= 0 && device < kMaxDevices, "cuda allocator: bad device index {}", device);
    std::lock_guard<std::mutex> lock(mutex_);
    auto& slot = pools_[static_cast<size_t>(device)];
    if (!slot) {
      HT_CHECK(device < device_count(), "cannot allocate on cuda:{}: {} CUDA device(s) visible{}{}", device,
               device_count(), is_available() ? "" : " — ", unavailable_reason());
      slot = std::make_unique<DevicePool>(device);
    }
    return *slot;
  }

  bool has_pool(int device) {
    std::lock_guard<std::mutex> lock(mutex_);
    return device >= 0 && device < kMaxDevices && pools_[static_cast<size_t>(device)] != nullptr;
  }

 private:
  std::mutex mutex_;
  std::array<std::unique_ptr<DevicePool>, kMaxDevices> pools_;
};

CudaAllocator& instance() {
  static CudaAllocator* allocator = new CudaAllocator();  // outlives static tensors
  return *allocator;
}

}  // namespace

Allocator* cuda_allocator() { return &instance(); }

void* scratch_allocate(size_t bytes) { return instance().pool(current_device()).allocate(bytes); }
void scratch_free(void* ptr, size_t) { instance().pool(current_device()).deallocate(ptr); }

MemoryStats memory_stats(int device) { return instance().has_pool(device) ? instance().pool(device).stats() : MemoryStats{}; }
void reset_peak_memory_stats(int device) {
  if (instance().has_pool(device)) instance().pool(device).reset_peak();
}
void empty_cache(int device) {
  if (instance().has_pool(device)) instance().pool(device).empty_cache();
}

}  // namespace hetu::cuda
