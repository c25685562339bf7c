// Storage and the CPU allocator (64-byte aligned so SIMD loads never split cache lines).
#include "lib/core/storage.h"

#include <array>
#include <cstdlib>

#include "lib/util/error.h"

namespace hetu {
namespace {

class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override {
    const size_t rounded = (std::max<size_t>(nbytes, 1) + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
    void* ptr = std::aligned_alloc(kCpuAlignment, rounded);
    HT_CHECK(ptr != nullptr, "out of host memory allocating {} bytes", nbytes);
    return ptr;
  }
  void deallocate(void* ptr, size_t) override { std::free(ptr); }
};

std::array<Allocator*, 2>& allocators() {
  static CpuAllocator cpu;
  static std::array<Allocator*, 2> table = {&cpu, nullptr};
  return table;
}

}  // namespace

Allocator* allocator_for(Device device) {
  Allocator* allocator = allocators()[static_cast<size_t>(device.type)];
  HT_CHECK(allocator != nullptr, "no allocator for device {} (built without that backend?)", device.str());
  return allocator;
}

void register_allocator(DeviceType type, Allocator* allocator) { allocators()[static_cast<size_t>(type)] = allocator; }

std::shared_ptr<Storage> Storage::allocate(size_t nbytes, Device device) {
  Allocator* allocator = allocator_for(device);
  std::shared_ptr<Storage> storage(new Storage(allocator->allocate(nbytes), nbytes, device));
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
    allocator_->deallocate(data_, nbytes_);
  } else if (release_) {
    release_(data_);
  }
}

}  // namespace hetu
