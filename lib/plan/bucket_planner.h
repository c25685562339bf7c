// The per-step bucket planner (`[parallel] auto = true` with documents): given the document
// lengths of one global batch and candidate strategies priced for documents (document_cost.h),
// the bucket boundaries and a strategy per bucket with the least predicted step time: the sum
// over buckets of their time under their strategy, each paying its strategy's switch_s
// (parameters in, gradients back). Sorted lengths, a DP over bucket ends x strategies, the
// pipelines tabulated once per strategy (see Note [Bucket planner] in bucket_planner.cpp).
// Deterministic: the same lengths (in any order) and strategies give the same plan.
//
//   BucketPlanner planner({short_strategy, long_strategy}, {.max_batch_tokens = 65536});
//   BucketPlan p = planner.plan(lengths);   // per step; the goal: 10 ms for 1,000 lengths
//   p.buckets[0].max_len == 512, p.buckets[0].strategy == "short"; p.buckets[1].max_len == nullopt
//
// Contract of BucketPlan (what the engine that runs buckets consumes): buckets in increasing
// max_len, every max_len set but the last one's (nullopt: every longer document); a document
// of L tokens belongs to the first bucket whose max_len >= L (the last bucket when none), so
// bucket k holds the lengths in (max_len[k-1], max_len[k]]. Every bucket holds at least one of
// the planned documents, and every document fits its bucket's strategy (load_fits). strategy
// names a DocumentStrategy given to the planner; one strategy may serve several buckets.
// Lengths are what the loader packs (documents cut at seq_len).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lib/plan/document_cost.h"

namespace hetu::plan {

struct PlannedBucket {
  std::optional<int64_t> max_len;  // nullopt: the last bucket
  std::string strategy;
  int64_t documents = 0;           // of the planned batch
  double tokens = 0;
  double predicted_s = 0;          // its pipeline time plus its strategy's switch_s
};

struct BucketPlan {
  std::vector<PlannedBucket> buckets;
  double predicted_s = 0;          // the sum over buckets
};

struct BucketPlannerOptions {
  int64_t max_boundaries = 64;     // candidate bucket ends (all distinct lengths when there are no more)
  int64_t ratio_points = 65;       // the pipeline tables' grid over Σ L² / Σ L, per strategy
  int64_t max_batch_tokens = 0;    // the largest batch planned (tables cover its micro-batches, at the
                                   // shortest rows); 0: 64 per replica
  // The rows of `row_length` tokens a bucket's pieces (in stream order) fill as the batcher
  // packs them (DocumentLoad::rows); empty: as many as their tokens fill.
  std::function<double(std::span<const int64_t> pieces, int64_t row_length)> packed_rows;
};

class BucketPlanner {
 public:
  // Throws UsageError on no strategies, two of one name, or one without replicas or stages.
  explicit BucketPlanner(std::vector<DocumentStrategy> strategies, BucketPlannerOptions options = {});

  // Throws UsageError on no lengths, a length < 1, or a document no strategy can hold.
  BucketPlan plan(std::span<const int64_t> lengths) const;

  // What the plan prices `load` at under strategy `s` (tabulated pipelines; kDocumentsDoNotFit
  // when it does not fit): load_time_s within the tables' interpolation (Note [Bucket planner]).
  double bucket_s(size_t s, const DocumentLoad& load) const;

  const std::vector<DocumentStrategy>& strategies() const { return strategies_; }

 private:
  struct ReplicaTable {
    int64_t micro_batches = 0;         // tabulated for 1..micro_batches
    int64_t extrapolate_after = 0;     // past this many, G_m is extrapolated (Note [Bucket planner])
    std::vector<double> makespan;      // [(m - 1) x ratio points + k]: per token of a micro-batch
    std::vector<double> fixed_makespan;  // [m - 1]: F_m, the micro-batches' fixed parts alone
    std::vector<int64_t> fitting;      // [m - 1]: max_fitting_tokens
  };
  double replica_s(size_t s, size_t r, const ReplicaPart& part, double ratio) const;

  std::vector<DocumentStrategy> strategies_;
  BucketPlannerOptions options_;
  std::vector<std::vector<double>> ratios_;          // [strategy]: the grid, increasing
  std::vector<std::vector<ReplicaTable>> tables_;    // [strategy][replica]
  std::vector<std::vector<size_t>> alike_;           // [strategy][replica]: the first replica equal to it
};

}  // namespace hetu::plan
