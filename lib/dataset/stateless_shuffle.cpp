// The stateless shuffle of the data loaders (stateless_shuffle.h).
#include "lib/dataset/stateless_shuffle.h"

#include <string>

#include "lib/core/rng.h"
#include "lib/util/error.h"

namespace hetu::dataset {
namespace {
// Note [Stateless shuffle]
// A shuffled epoch must be a permutation of the N windows that depends only on (seed, epoch),
// so that a position {epoch, batch, sequence} is all a loader needs to resume, every replica
// computes the same order without talking, and nothing O(N) is stored. We use a Feistel
// network over [0, 2^bits) (bits even, 2^bits >= N): 6 rounds whose round function is the
// counter-based Philox RNG (lib/core/rng.h) keyed by the seed, in the stream
// "data.shuffle.epoch.<epoch>", at index (round << 32 | right half). A Feistel network is a
// bijection of [0, 2^bits) whatever its round function; "cycle walking" (apply it again while
// the result is >= N) restricts it to a bijection of [0, N). Since 2^bits < 4N, a position
// takes fewer than 4 walks on average.
constexpr int kFeistelRounds = 6;

}  // namespace

int64_t shuffled_position(uint64_t seed, int64_t epoch, int64_t n, int64_t p) {
  HT_CHECK(n > 0 && n < (int64_t{1} << 62), "shuffle: {} windows is out of range", n);
  int bits = 2;
  while ((int64_t{1} << bits) < n) bits += 2;
  const int half = bits / 2;
  const uint64_t mask = (uint64_t{1} << half) - 1;
  const CounterRng rng(seed, "data.shuffle.epoch." + std::to_string(epoch));
  auto x = static_cast<uint64_t>(p);
  do {
    uint64_t left = x >> half, right = x & mask;
    for (int round = 0; round < kFeistelRounds; ++round) {
      const auto out = rng.bits(static_cast<int64_t>((static_cast<uint64_t>(round) << 32) | right));
      const uint64_t f = (out[0] | (static_cast<uint64_t>(out[1]) << 32)) & mask;
      const uint64_t next = left ^ f;
      left = right;
      right = next;
    }
    x = (left << half) | right;
  } while (x >= static_cast<uint64_t>(n));
  return static_cast<int64_t>(x);
}

}  // namespace hetu::dataset
