// preview_buckets (bucket_preview.h): the batch drawn, planned and timed, and the best single
// strategy priced on the same packed rows.
#include "lib/plan/bucket_preview.h"

#include <algorithm>
#include <chrono>

#include "lib/dataset/bucket_batcher.h"
#include "lib/dataset/document_packing.h"
#include "lib/pipeline/bucket_rows.h"

namespace hetu::plan {

BucketPreview preview_buckets(const config::LoadedConfig& loaded, std::vector<DocumentStrategy> strategies) {
  const config::JobConfig& c = loaded.config;
  const double batch_tokens = static_cast<double>(c.training.global_batch * c.training.seq_len);
  const int64_t shortest = std::min<int64_t>(32, c.training.seq_len);
  const std::vector<int64_t> drawn = dataset::long_tailed_lengths(static_cast<int64_t>(batch_tokens) / shortest + 1,
                                                                  shortest, c.training.seq_len, c.job.seed);
  BucketPreview out;
  double tokens = 0;
  for (size_t i = 0; tokens < batch_tokens; ++i) {  // the last one cut to fill the batch exactly
    out.lengths.push_back(std::min<int64_t>(drawn[i], static_cast<int64_t>(batch_tokens - tokens)));
    tokens += static_cast<double>(out.lengths.back());
  }
  const BucketPlanner planner(std::move(strategies),
                              {.max_batch_tokens = static_cast<int64_t>(tokens), .packed_rows = dataset::packed_rows});
  const auto start = std::chrono::steady_clock::now();
  out.plan = planner.plan(out.lengths);
  out.plan_ms = 1e3 * std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  DocumentLoad all;
  for (int64_t l : out.lengths) all.add(l);
  all.rows = dataset::packed_rows(out.lengths, pipeline::bucket_row_length(c.training.seq_len, all.longest));  // as the plan's
  size_t single = 0;
  for (size_t s = 1; s < planner.strategies().size(); ++s)
    if (planner.bucket_s(s, all) < planner.bucket_s(single, all)) single = s;
  out.best_single_s = planner.bucket_s(single, all);
  out.best_single_strategy = planner.strategies()[single].name;
  return out;
}

}  // namespace hetu::plan
