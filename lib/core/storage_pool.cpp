// BlockPool: best-fit blocks split out of segments and merged again when freed.
#include "lib/core/storage_pool.h"

#include <cstdlib>
#include <iterator>

#include "lib/util/error.h"

namespace hetu {

BlockPool::BlockPool(size_t alignment, size_t min_split, size_t max_free)
    : alignment_(alignment), min_split_(min_split), max_free_(max_free) {}

BlockPool::~BlockPool() {
  for (const auto& [address, block] : blocks_) {
    if (block.free && address == block.segment && block.size == block.segment_size) std::free(address);
  }
}

void* BlockPool::allocate(size_t nbytes) {
  HT_CHECK(nbytes > 0 && nbytes % alignment_ == 0, "block pool: {} bytes is not a multiple of {}", nbytes, alignment_);
  auto fit = free_.lower_bound({nbytes, nullptr});
  if (fit == free_.end()) {
    void* ptr = std::aligned_alloc(alignment_, nbytes);
    if (ptr == nullptr) return nullptr;
    char* segment = static_cast<char*>(ptr);
    blocks_.emplace(segment, Block{segment, nbytes, nbytes, false});
    segment_bytes_ += nbytes;
    return ptr;
  }
  char* address = fit->second;
  free_.erase(fit);
  Block& block = blocks_.at(address);
  free_bytes_ -= block.size;
  if (block.size - nbytes >= min_split_) {  // the rest stays free
    const Block rest{block.segment, block.segment_size, block.size - nbytes, true};
    block.size = nbytes;
    blocks_.emplace(address + nbytes, rest);
    free_.insert({rest.size, address + nbytes});
    free_bytes_ += rest.size;
  }
  block.free = false;
  return address;
}

void BlockPool::deallocate(void* ptr) {
  auto it = blocks_.find(static_cast<char*>(ptr));
  HT_CHECK(it != blocks_.end() && !it->second.free, "block pool: {} is not a block in use", ptr);
  make_free(it);
}

void BlockPool::make_free(Blocks::iterator it) {
  it->second.free = true;
  free_bytes_ += it->second.size;
  auto merge_next = [&](Blocks::iterator block) {  // absorbs the free block after `block`
    auto next = std::next(block);
    if (next == blocks_.end() || !next->second.free || next->second.segment != block->second.segment) return;
    free_.erase({next->second.size, next->first});
    block->second.size += next->second.size;
    blocks_.erase(next);
  };
  merge_next(it);
  if (it != blocks_.begin()) {
    auto prev = std::prev(it);
    if (prev->second.free && prev->second.segment == it->second.segment) {
      free_.erase({prev->second.size, prev->first});
      merge_next(prev);
      it = prev;
    }
  }
  Block& block = it->second;
  if (it->first == block.segment && block.size == block.segment_size && free_bytes_ > max_free_) {
    free_bytes_ -= block.size;
    segment_bytes_ -= block.size;
    std::free(block.segment);
    blocks_.erase(it);
    return;
  }
  free_.insert({block.size, it->first});
}

}  // namespace hetu
