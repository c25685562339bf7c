// The CPU allocator's block pool: freed blocks serve later requests of other sizes (split from
// a larger block, merged from neighbours), live blocks never overlap, and a segment freed whole
// goes back to the system once the pool keeps its limit of free bytes. The reference is a
// plain list of the live blocks' address ranges, and each block's bytes filled with its own
// pattern and checked before it is freed.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <map>
#include <random>

#include "lib/core/storage_pool.h"

using namespace hetu;

namespace {
constexpr size_t kKiB = 1024;
}  // namespace

TEST_CASE("block pool: a freed block is split for smaller requests and merged again", "[storage]") {
  BlockPool pool(64, 64 * kKiB, size_t{1} << 30);
  char* a = static_cast<char*>(pool.allocate(1024 * kKiB));
  REQUIRE(a != nullptr);
  CHECK(pool.segment_bytes() == 1024 * kKiB);
  pool.deallocate(a);
  CHECK(pool.free_bytes() == 1024 * kKiB);
  // Two halves of the freed block, at its addresses, with no new segment.
  char* b = static_cast<char*>(pool.allocate(512 * kKiB));
  char* c = static_cast<char*>(pool.allocate(512 * kKiB));
  CHECK(b == a);
  CHECK(c == a + 512 * kKiB);
  CHECK(pool.segment_bytes() == 1024 * kKiB);
  CHECK(pool.free_bytes() == 0);
  // Freed in either order, the halves merge: the whole size fits at the start again.
  pool.deallocate(c);
  pool.deallocate(b);
  CHECK(pool.allocate(1024 * kKiB) == a);
  // A rest smaller than the split size stays with the block (no sliver of free memory).
  pool.deallocate(a);
  CHECK(pool.allocate(1024 * kKiB - 64) == a);
  CHECK(pool.free_bytes() == 0);
  CHECK_THROWS_WITH(pool.deallocate(a + 64), Catch::Contains("not a block in use"));
}

TEST_CASE("block pool: the smallest free block that fits is taken", "[storage]") {
  BlockPool pool(64, 64 * kKiB, size_t{1} << 30);
  void* big = pool.allocate(4096 * kKiB);
  void* small = pool.allocate(256 * kKiB);
  pool.deallocate(big);
  pool.deallocate(small);
  CHECK(pool.allocate(128 * kKiB) == small);
  CHECK(pool.allocate(512 * kKiB) == big);
}

TEST_CASE("block pool: a segment freed whole goes back past the free limit", "[storage]") {
  BlockPool pool(64, 64 * kKiB, 1024 * kKiB);
  void* a = pool.allocate(1024 * kKiB);
  void* b = pool.allocate(1024 * kKiB);
  pool.deallocate(a);  // 1 MiB free: within the limit, kept
  CHECK(pool.free_bytes() == 1024 * kKiB);
  pool.deallocate(b);  // 2 MiB would pass it: b's segment is returned
  CHECK(pool.free_bytes() == 1024 * kKiB);
  CHECK(pool.segment_bytes() == 1024 * kKiB);
}

TEST_CASE("block pool: random requests never overlap and keep their bytes", "[storage]") {
  BlockPool pool(64, 64 * kKiB, size_t{64} << 20);
  std::mt19937 rng(7);
  std::map<char*, std::pair<size_t, uint8_t>> live;  // address -> (size, fill byte)
  auto check_and_free = [&](std::map<char*, std::pair<size_t, uint8_t>>::iterator it) {
    const auto [size, fill] = it->second;
    for (size_t i = 0; i < size; i += 4093) REQUIRE(static_cast<uint8_t>(it->first[i]) == fill);
    REQUIRE(static_cast<uint8_t>(it->first[size - 1]) == fill);
    pool.deallocate(it->first);
    live.erase(it);
  };
  for (int round = 0; round < 2000; ++round) {
    if (!live.empty() && rng() % 3 == 0) {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      check_and_free(it);
      continue;
    }
    const size_t size = (64 * kKiB / 64 + rng() % (2048 * kKiB / 64)) * 64;
    char* p = static_cast<char*>(pool.allocate(size));
    REQUIRE(p != nullptr);
    REQUIRE(reinterpret_cast<uintptr_t>(p) % 64 == 0);
    auto next = live.lower_bound(p);
    if (next != live.end()) REQUIRE(p + size <= next->first);
    if (next != live.begin()) {
      auto prev = std::prev(next);
      REQUIRE(prev->first + prev->second.first <= p);
    }
    const auto fill = static_cast<uint8_t>(rng());
    std::memset(p, fill, size);
    live[p] = {size, fill};
  }
  while (!live.empty()) check_and_free(live.begin());
  CHECK(pool.free_bytes() <= pool.segment_bytes());
}
