// Document packing: which documents (pieces of at most seq_len tokens) go into which row of a
// global batch, and which replica runs each row. A global batch is Σ shares rows of seq_len
// tokens; replica k owns shares[k] rows (its batch share, which the layout sizes to its
// speed). Rows are filled in stream order by next-fit (NextFitRows decides where a global
// batch ends), then the same pieces are re-placed so that every replica's cost per row is
// even: a row costs linear_per_token · seq_len (every token slot, padding included, goes
// through the projections and the MLP) plus L² per document of L tokens (attention); a greedy
// placement, then a refinement pass of row and piece swaps that lowers the largest load, see
// Note [Balanced packing] in document_packing.cpp.
//
//   NextFitRows fill(/*rows=*/4, /*seq_len=*/2048);
//   while (fill.add(next_length)) ...;                      // false: the batch is full
//   PackedBatch b = pack_balanced(lengths, {1, 1, 2}, 2048);
//   b.rows[r] = indices into lengths, the pieces of row r; replica 1 owns rows [1, 2).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace hetu::dataset {

struct PackingCost {
  double linear_per_token = 0;  // the non-attention cost of one token slot, in units of one L² step
  static double attention(int64_t length) { return static_cast<double>(length) * static_cast<double>(length); }
};

// Next-fit over rows of seq_len: a piece goes into the current row, or opens the next one.
class NextFitRows {
 public:
  NextFitRows(int64_t rows, int64_t seq_len);
  // False (and nothing changes) when the piece fits neither the current row nor a new one:
  // the global batch is full and the piece starts the next one. length in [1, seq_len].
  bool add(int64_t length);
  int64_t pieces() const { return pieces_; }
  int64_t rows_used() const { return pieces_ == 0 ? 0 : row_ + 1; }
  const std::vector<int64_t>& row_of() const { return row_of_; }  // the row of each piece added

 private:
  int64_t rows_, seq_len_;
  int64_t row_ = 0, used_ = 0, pieces_ = 0;
  std::vector<int64_t> row_of_;
};

struct PackedBatch {
  std::vector<std::vector<int64_t>> rows;  // Σ shares rows; each the pieces it holds, in order
};

// The naive packing: next-fit in stream order, row r to whichever replica owns row r.
// Every length must be in [1, seq_len] and the pieces must fit (NextFitRows said so).
PackedBatch pack_in_order(std::span<const int64_t> lengths, std::span<const int64_t> shares, int64_t seq_len);

// The same pieces placed so that each replica's Σ cost / share is even (Note [Balanced
// packing]); rows within a replica are ordered so consecutive micro-batches of
// micro_batch[k] rows cost alike (0 or missing: rows in placement order).
PackedBatch pack_balanced(std::span<const int64_t> lengths, std::span<const int64_t> shares, int64_t seq_len,
                          std::span<const int64_t> micro_batch = {});

// Per replica, divided by its share: Σ L² over its pieces (attention), and that plus
// linear_per_token · seq_len per row (total).
struct ReplicaLoads {
  std::vector<double> attention, total;
};
ReplicaLoads replica_loads(const PackedBatch& batch, std::span<const int64_t> lengths, std::span<const int64_t> shares,
                           int64_t seq_len, const PackingCost& cost);
// max / mean of values (1 when all are equal; values must not all be 0).
double max_over_mean(std::span<const double> values);

// Documents of the given lengths, in order, cut into pieces of at most seq_len and packed into
// consecutive global batches as the loader does (pieces left at the end that cannot fill one
// are dropped): per batch the max / mean over replicas of the attention load and of the
// whole cost, averaged over the batches, for the in-order and the balanced packing; the
// balanced one with the batches re-formed in windows of `window` (window_packing.h).
struct BalanceReport {
  int64_t batches = 0;
  double in_order_attention = 0, balanced_attention = 0;
  double in_order_total = 0, balanced_total = 0;
  double attention_bound = 0;  // no packing of the stream-order batches is lower (packing_bound.h)
  double in_order_fill = 1, balanced_fill = 1;  // the least tokens a batch holds / its Σ shares · seq_len
};
// n document lengths in [lo, hi], long-tailed: P(L > x) ∝ 1/x - 1/hi (a truncated Pareto of
// index 1: most documents short, a few near hi), from the counter-based RNG keyed by seed.
std::vector<int64_t> long_tailed_lengths(int64_t n, int64_t lo, int64_t hi, uint64_t seed);

BalanceReport packing_balance(std::span<const int64_t> document_lengths, std::span<const int64_t> shares,
                              int64_t seq_len, const PackingCost& cost, int64_t window = 1);

}  // namespace hetu::dataset
