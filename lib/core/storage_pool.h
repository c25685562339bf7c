// BlockPool: the CPU allocator's cache of large blocks (Note [CPU caching allocator] in
// storage.cpp). Memory comes from the system in segments, one per request the pool could not
// serve; a freed block stays in the pool, merged with free neighbours of its segment, and a
// request takes the smallest free block that fits, split when what is left could serve
// another. Pages already touched are handed out again whatever the sizes: a strategy switch
// frees tensors of one set of sizes and allocates another. Not thread-safe (the allocator
// locks around it).
//
//   BlockPool pool(64 << 10, size_t{4} << 30);
//   void* a = pool.allocate(1 << 20);  // a new segment
//   pool.deallocate(a);                // kept
//   void* b = pool.allocate(1 << 19);  // the first half of a's block
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <utility>

namespace hetu {

class BlockPool {
 public:
  // `min_split`: a free block is split only when the rest has at least this many bytes.
  // `max_free`: a segment that becomes wholly free goes back to the system when the pool
  // would otherwise keep more than this many free bytes. Sizes are multiples of `alignment`.
  BlockPool(size_t alignment, size_t min_split, size_t max_free);
  ~BlockPool();  // returns the wholly free segments (a block still in use keeps its segment)
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // `nbytes` bytes (a multiple of the alignment), aligned; nullptr when the system has none.
  void* allocate(size_t nbytes);
  // A block from allocate (throws on any other pointer).
  void deallocate(void* ptr);
  // Bytes of free blocks kept, and of segments held from the system.
  size_t free_bytes() const { return free_bytes_; }
  size_t segment_bytes() const { return segment_bytes_; }

 private:
  struct Block {
    char* segment;        // the start of its segment
    size_t segment_size;
    size_t size;
    bool free;
  };
  using Blocks = std::map<char*, Block>;  // every block of every segment, by address
  void make_free(Blocks::iterator block);

  size_t alignment_, min_split_, max_free_;
  Blocks blocks_;
  std::set<std::pair<size_t, char*>> free_;  // free blocks by (size, address): best fit first
  size_t free_bytes_ = 0;
  size_t segment_bytes_ = 0;
};

}  // namespace hetu
