// BucketBatcher: the global batches of data.packing = "documents" cut by length into buckets
// ([[parallel.bucket]], a layout per batch). The global batch is the one DocumentBatcher
// reads in stream order (the same pieces, in the same order, as every layout without buckets
// at data.balance_window = 1: buckets ignore the window, their rounds are balanced instead);
// each piece (a document, or a seq_len piece of a longer one) goes to the first bucket whose max_len is
// at least its length. A bucket's rows are as long as its longest piece needs
// (lib/pipeline/bucket_rows.h: seq_len / row_factor), and its pieces, in stream order, fill
// rounds of row_factor x global_batch such rows (the token budget of a global batch) by
// next-fit; each round is placed cost-balanced over the replicas of the bucket's strategy
// (their batch shares and micro-batches of micro_batch rows, each share row_factor x as many
// rows, document_packing.h). A round its pieces do not fill (a bucket's last) has only the
// rows they use, each replica its share of them rounded up to whole micro-batches (at least
// one), so that no micro-batch of padding runs. A bucket without pieces has no
// round. The loss normalizer is the whole global batch's target count, every bucket included.
// Planned buckets ([parallel] auto = true): a BucketPlanFn, given the lengths of each global
// batch's pieces in stream order, returns that step's buckets (their strategies named).
//
//   BucketBatcher b(data, {{.max_len = 16, .shares = {2, 2, 2, 2}, .micro_batch = {1, 1, 1, 1}},
//                          {.max_len = 0, .shares = {4, 4}, .micro_batch = {2, 2}}});
//   b.next_step();  // b.rounds(1) rounds of bucket 1; b.micro_batch(1, 0, 1, 0): replica 1's first
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "lib/dataset/data_loader.h"

namespace hetu::dataset {

struct BucketShape {
  int64_t max_len = 0;                   // longest piece it takes; 0: every longer one (the last bucket)
  std::vector<int64_t> shares;           // rows per replica of its strategy, summing to global_batch
  std::vector<int64_t> micro_batch;      // rows per micro-batch of each replica
  std::string strategy;                  // the strategy that runs it (planned buckets)
};

// A step's buckets from its global batch's piece lengths (in stream order).
using BucketPlanFn = std::function<std::vector<BucketShape>(std::span<const int64_t> lengths)>;

// The rows of `row_length` tokens a bucket's pieces (in stream order, each at most row_length)
// fill as the batcher packs them: next-fit, rounds aside (what the bucket planner prices,
// lib/plan/document_cost.h DocumentLoad::rows).
double packed_rows(std::span<const int64_t> pieces, int64_t row_length);

class BucketBatcher {
 public:
  // `data`: the job's loader options (packing = documents); the buckets in increasing max_len.
  BucketBatcher(const DataLoaderOptions& data, std::vector<BucketShape> buckets);
  // Buckets planned per step: `plan` is called in every next_step().
  BucketBatcher(const DataLoaderOptions& data, BucketPlanFn plan);

  // Reads the next global batch and cuts it into buckets and rounds.
  void next_step();
  int64_t buckets() const { return static_cast<int64_t>(buckets_.size()); }
  int64_t rounds(int64_t bucket) const;
  // Rows of the bucket's rounds per row of seq_len (its rows are seq_len / row_factor long);
  // a replica runs row_factor x its micro-batches per round.
  int64_t row_factor(int64_t bucket) const;
  // The micro-batches `replica` runs in round `round` of `bucket` (a full round: row_factor x
  // its share over its micro-batch).
  int64_t micro_batches(int64_t bucket, int64_t round, int64_t replica) const;
  const BucketShape& shape(int64_t bucket) const { return buckets_.at(static_cast<size_t>(bucket)); }
  int64_t global_targets() const { return global_targets_; }
  int64_t seq_len() const { return seq_len_; }
  // Micro-batch `index` of `replica` (of the bucket's strategy) in round `round` of `bucket`,
  // global_targets set.
  DocumentBatch micro_batch(int64_t bucket, int64_t round, int64_t replica, int64_t index) const;

  // Between steps; the format and global batch boundaries of DataLoader::position().
  DataPosition position() const { return loader_.position(); }
  void restore(const DataPosition& position) { loader_.restore(position); }

 private:
  struct Round {
    std::vector<DocumentBatcher::Piece> pieces;
    std::vector<int64_t> shares;  // rows per replica
    PackedBatch packed;
  };
  void check_buckets() const;
  DataLoader loader_;  // the whole global batch as one replica's share
  int64_t seq_len_;
  std::vector<BucketShape> buckets_;       // the current step's
  BucketPlanFn plan_;                      // empty: buckets_ are fixed
  int64_t global_batch_;
  std::vector<std::vector<Round>> rounds_;  // of the current step, per bucket
  std::vector<int64_t> row_factor_;         // of the current step, per bucket
  int64_t global_targets_ = 0;
};

}  // namespace hetu::dataset
