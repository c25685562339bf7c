// bucket_memory_check: fixed buckets' lanes priced against their devices' memory at launch.
#include "lib/plan/bucket_memory_check.h"

#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>

#include "lib/plan/document_strategies.h"
#include "lib/plan/layout_cost.h"
#include "lib/util/error.h"

namespace hetu::plan {

void check_bucket_memory(const config::LoadedConfig& loaded, const profile::Profile& profile) {
  const config::JobConfig& c = loaded.config;
  const bool any_lane = std::any_of(c.buckets.begin(), c.buckets.end(), [](const config::BucketSection& b) {
    return b.strategy != config::kDefaultStrategy;
  });
  if (!any_lane) return;
  // The estimate is tested within 10% (tests/e2e/plan_memory.sh): the planner picks only what
  // fits within kComputeCopyMemoryShare of the memory; a bucket the job fixes is refused only
  // when not even one micro-batch of its rows fits in 1 / kComputeCopyMemoryShare of it (it
  // cannot fit however high the estimate is), and warned about when the planner would not pick it.
  const std::vector<plan::DocumentStrategy> strategies =
      job_strategies(loaded, profile, /*memory_share=*/1 / plan::kComputeCopyMemoryShare);
  const std::vector<plan::DocumentStrategy> planned = job_strategies(loaded, profile);
  for (size_t b = 0; b < c.buckets.size(); ++b) {
    const config::BucketSection& bucket = c.buckets[b];
    if (bucket.strategy == config::kDefaultStrategy) continue;
    const auto s = std::find_if(strategies.begin(), strategies.end(),
                                [&](const plan::DocumentStrategy& d) { return d.name == bucket.strategy; });
    HT_CHECK(s != strategies.end(), "parallel.bucket[{}]: strategy {} was not priced", b, bucket.strategy);
    const int64_t longest = std::min(bucket.max_len.value_or(c.training.seq_len), c.training.seq_len);
    const plan::DocumentLoad load = plan::full_batch_load(c.training.global_batch, c.training.seq_len, longest);
    const std::string what = fmt::format("parallel.bucket[{}] (documents of up to {} tokens, strategy '{}')", b, longest,
                                         bucket.strategy);
    auto device = [&](const plan::MemoryShortfall& m) {
      const LayoutEstimate estimate = estimate_layout(under_strategy(loaded, bucket.strategy), profile);
      const StageEstimateInfo& stage = estimate.stages.at(m.replica).at(m.stage);
      return fmt::format("device {} ({}, replica {}, stage {})", stage.devices, stage.device_type, m.replica, m.stage);
    };
    constexpr double kGiB = double(1 << 30);
    if (const std::optional<plan::MemoryShortfall> m = plan::memory_shortfall(*s, load, /*micro_batches=*/1)) {
      HT_USAGE_ERROR("{}: {} would need about {:.5f} GiB for one micro-batch of {} tokens beside the strategy's compute "
                     "copy of the parameters, its gradients and the default strategy's training state, over its "
                     "{:.5f} GiB (memory_gib) by more than the estimate's 10%: lower the bucket's max_len, give the "
                     "strategy more tp or pp, or use devices with more memory",
                     what, device(*m), m->needed_bytes / kGiB, m->micro_batch_tokens,
                     m->memory_bytes * plan::kComputeCopyMemoryShare / kGiB);
    }
    const auto as_planned = planned.begin() + (s - strategies.begin());
    if (const std::optional<plan::MemoryShortfall> m = plan::memory_shortfall(*as_planned, load)) {
      spdlog::warn("{}: {} would need about {:.5f} GiB with its pipeline full of micro-batches of {} tokens, over the "
                   "{:.5f} GiB the bucket planner plans with ({:.0f}% of memory_gib): it may run out of memory on a "
                   "batch of many such documents",
                   what, device(*m), m->needed_bytes / kGiB, m->micro_batch_tokens, m->memory_bytes / kGiB,
                   100 * plan::kComputeCopyMemoryShare);
    }
  }
}

}  // namespace hetu::plan
