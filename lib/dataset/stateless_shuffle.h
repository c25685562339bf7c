// A permutation of [0, n) that depends only on (seed, epoch): position p of a shuffled epoch
// holds item shuffled_position(seed, epoch, n, p). The data loaders' shuffled order (windows,
// or documents with data.packing = "documents"); see Note [Stateless shuffle].
#pragma once

#include <cstdint>

namespace hetu::dataset {

int64_t shuffled_position(uint64_t seed, int64_t epoch, int64_t n, int64_t p);

}  // namespace hetu::dataset
