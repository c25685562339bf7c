// What the bucket planner (bucket_planner.h) makes of one global batch of documents, for
// `hetu plan` on a job with data.packing = "documents": a long-tailed batch of the job's tokens
// per step (dataset::long_tailed_lengths, 32 to seq_len tokens, the job's seed) planned over
// `strategies`, beside the best single strategy for the whole batch.
//
//   BucketPreview p = preview_buckets(loaded, job_strategies(loaded, profile));
//   p.plan.predicted_s;   // against p.best_single_s under p.best_single_strategy
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/config/config.h"
#include "lib/plan/bucket_planner.h"

namespace hetu::plan {

struct BucketPreview {
  std::vector<int64_t> lengths;     // the batch's documents (the last one cut to fill it exactly)
  BucketPlan plan;                  // the planner's buckets
  double plan_ms = 0;               // how long planning took
  std::string best_single_strategy;  // the strategy fastest on the whole batch
  double best_single_s = 0;         // its predicted time
};

BucketPreview preview_buckets(const config::LoadedConfig& loaded, std::vector<DocumentStrategy> strategies);

}  // namespace hetu::plan
