// hetu plan's per-batch layouts on a long-tailed batch (lib/plan/bucket_preview.h), checked
// against what the batch must be: the job's tokens per step exactly, drawn from
// dataset::long_tailed_lengths with the job's seed and the last document cut to fill it; the
// planner's buckets holding every document and token once; the best single strategy one of the
// job's, its time the least of the strategies' times for the whole batch priced here.
#include <catch2/catch.hpp>

#include <numeric>
#include <set>

#include "lib/config/config.h"
#include "lib/dataset/bucket_batcher.h"
#include "lib/dataset/document_packing.h"
#include "lib/pipeline/bucket_rows.h"
#include "lib/plan/bucket_preview.h"
#include "lib/plan/document_strategies.h"

using namespace hetu;

TEST_CASE("bucket preview: the batch, its buckets and the best single strategy", "[bucket_preview]") {
  const config::LoadedConfig loaded = config::load_job_config(HETU_SOURCE_DIR "/configs/gpt2-buckets-cpu.toml", {});
  const config::JobConfig& c = loaded.config;
  const std::vector<plan::DocumentStrategy> strategies = plan::job_strategies(loaded, {});
  REQUIRE(strategies.size() >= 2);
  const plan::BucketPreview p = plan::preview_buckets(loaded, strategies);

  const int64_t batch_tokens = c.training.global_batch * c.training.seq_len;
  CHECK(std::accumulate(p.lengths.begin(), p.lengths.end(), int64_t{0}) == batch_tokens);
  const std::vector<int64_t> drawn = dataset::long_tailed_lengths(batch_tokens / 32 + 1, 32, c.training.seq_len, c.job.seed);
  REQUIRE(p.lengths.size() <= drawn.size());
  for (size_t i = 0; i + 1 < p.lengths.size(); ++i) CHECK(p.lengths[i] == drawn[i]);
  CHECK(p.lengths.back() >= 1);
  CHECK(p.lengths.back() <= drawn[p.lengths.size() - 1]);

  int64_t documents = 0;
  double tokens = 0;
  std::set<std::string> names;
  for (const plan::DocumentStrategy& s : strategies) names.insert(s.name);
  for (const plan::PlannedBucket& b : p.plan.buckets) {
    documents += b.documents;
    tokens += b.tokens;
    CHECK(names.count(b.strategy) == 1);
  }
  CHECK(documents == static_cast<int64_t>(p.lengths.size()));
  CHECK(tokens == static_cast<double>(batch_tokens));
  CHECK(p.plan_ms >= 0);

  // The whole batch under each strategy alone, priced by a planner of the same options.
  const plan::BucketPlanner planner(strategies, {.max_batch_tokens = batch_tokens, .packed_rows = dataset::packed_rows});
  plan::DocumentLoad all;
  for (int64_t l : p.lengths) all.add(l);
  all.rows = dataset::packed_rows(p.lengths, pipeline::bucket_row_length(c.training.seq_len, all.longest));
  double best = planner.bucket_s(0, all);
  for (size_t s = 0; s < strategies.size(); ++s) {
    CHECK(p.best_single_s <= planner.bucket_s(s, all));
    best = std::min(best, planner.bucket_s(s, all));
  }
  CHECK(p.best_single_s == best);
  CHECK(names.count(p.best_single_strategy) == 1);
}
