// A lower bound on how evenly documents can be packed: no packing of the pieces into rows of
// seq_len over replicas owning shares[k] rows each has a per-replica attention max / mean (Σ L²
// per share row, as replica_loads and max_over_mean in document_packing.h give it) below it,
// for equal and unequal shares. See Note [Packing balance bound] in packing_bound.cpp.
//
//   attention_bound({2048, 2048, 2048, 2048, 2048, 64}, {2, 2, 2, 2}, 2048);  // about 1.6: two 2,048s share a replica
#pragma once

#include <cstdint>
#include <span>

namespace hetu::dataset {

// 0 for no pieces; every length in [1, seq_len], every share >= 1.
double attention_bound(std::span<const int64_t> lengths, std::span<const int64_t> shares, int64_t seq_len);

}  // namespace hetu::dataset
