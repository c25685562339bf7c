// Window packing (data.balance_window = W): the pieces of W consecutive global batches, taken
// in stream order, re-formed into W global batches so that every (batch, replica) carries an
// even attention cost, not only the replicas within one batch (see Note [Balance window] in
// window_packing.cpp). Each batch keeps Σ shares rows of seq_len; the W batches together hold
// exactly the window's pieces, each once; the data order changes only within the window.
//
//   // lengths: the pieces of 2 next-fit global batches in stream order, 4 replicas of 4 rows
//   std::vector<WindowBatch> w = pack_window(lengths, 2, {4, 4, 4, 4}, 2048);
//   w[1].pieces: indices into lengths (stream order) of batch 1; w[1].packed.rows index w[1].pieces.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "lib/dataset/document_packing.h"

namespace hetu::dataset {

struct WindowBatch {
  std::vector<int64_t> pieces;  // indices into the window's lengths, increasing (stream order)
  PackedBatch packed;           // Σ shares rows; each the positions in `pieces` it holds
};

// The window's pieces (lengths in [1, seq_len], in stream order; they must fill `batches`
// global batches of Σ shares rows by next-fit, as NextFitRows said) spread over `batches`
// global batches × replicas, cost-balanced. micro_batch as in pack_balanced, per replica.
// batches = 1: the one batch pack_balanced forms.
std::vector<WindowBatch> pack_window(std::span<const int64_t> lengths, int64_t batches,
                                     std::span<const int64_t> shares, int64_t seq_len,
                                     std::span<const int64_t> micro_batch = {});

}  // namespace hetu::dataset
