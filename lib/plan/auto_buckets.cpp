// auto_buckets: the per-step bucket plan of [parallel] auto = true, as the batcher's buckets.
#include "lib/plan/auto_buckets.h"

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <map>
#include <memory>

#include "lib/plan/bucket_planner.h"
#include "lib/plan/document_strategies.h"
#include "lib/util/step_timer.h"

namespace hetu::plan {
namespace {

// "up to 16 tokens -> dp4; longer -> default"
std::string describe(const std::vector<dataset::BucketShape>& buckets) {
  std::string out;
  for (const dataset::BucketShape& b : buckets) {
    if (!out.empty()) out += "; ";
    out += b.max_len > 0 ? fmt::format("up to {} tokens -> {}", b.max_len, b.strategy) : "longer -> " + b.strategy;
  }
  return out;
}

// The longest documents a full global batch of them may have under `s`: the longest row
// (lib/pipeline/bucket_rows.h) whose micro-batches its devices hold (a compute copy's beside
// the default's training state); 0: none.
int64_t longest_held(const plan::DocumentStrategy& s, int64_t global_batch, int64_t seq_len) {
  for (int64_t row = seq_len; row >= 1; row = row % 2 == 0 ? row / 2 : 0) {
    if (plan::load_fits(s, plan::full_batch_load(global_batch, seq_len, row))) return row;
  }
  return 0;
}

struct PlanState {
  std::unique_ptr<plan::BucketPlanner> planner;
  std::map<std::string, dataset::BucketShape> shape_of;  // strategy name -> its replicas' shares
  std::string previous;                             // the last plan logged
  double outside_s = 0;  // a step's cost beside its buckets: the default's gradient sync and optimizer step
};

}  // namespace

std::vector<std::string> auto_bucket_strategies(const config::JobConfig& c) {
  std::vector<std::string> names{config::kDefaultStrategy};
  for (const config::StrategySection& s : c.strategies) names.push_back(s.name);
  return names;
}

dataset::BucketPlanFn auto_bucket_plan(const config::LoadedConfig& loaded, const profile::Profile& profile,
                                  const std::function<pipeline::ParallelLayout(const std::string&)>& layout_of) {
  const config::JobConfig& c = loaded.config;
  auto state = std::make_shared<PlanState>();
  state->planner = std::make_unique<plan::BucketPlanner>(
      job_strategies(loaded, profile),
      plan::BucketPlannerOptions{.max_batch_tokens = c.training.global_batch * c.training.seq_len,
                                 .packed_rows = dataset::packed_rows});
  for (const std::string& name : auto_bucket_strategies(c)) {
    dataset::BucketShape shape{0, {}, {}, name};
    for (const pipeline::ReplicaLayout& r : layout_of(name).replicas) {
      shape.shares.push_back(r.batch);
      shape.micro_batch.push_back(r.micro_batch);
    }
    state->shape_of[name] = std::move(shape);
  }
  const plan::LayoutPrediction held = estimate_layout(under_strategy(loaded, config::kDefaultStrategy), profile).prediction;
  state->outside_s = held.grad_sync_s + held.optimizer_s;
  for (const plan::DocumentStrategy& s : state->planner->strategies()) {
    double fixed_ms = 0;  // its first replica's, forward and backward through every stage
    for (size_t k = 0; k < s.replicas.front().stages.size(); ++k) {
      const plan::StageTimes f = plan::fixed_times(s.replicas.front(), k);
      fixed_ms += 1e3 * (f.forward_s + f.backward_s);
    }
    spdlog::info("parallel.auto: strategy {}{} holds rows of up to {} tokens in its devices' memory; each "
                 "micro-batch pays {:.3f} ms however few its tokens (Note [Fixed cost per micro-batch])",
                 s.name,
                 s.name == config::kDefaultStrategy ? "" : " (a compute copy and its gradients beside the default's state)",
                 longest_held(s, c.training.global_batch, c.training.seq_len), fixed_ms);
  }
  spdlog::info("parallel.auto: each step's buckets planned over the strategies {} (profile: {})",
               fmt::join(auto_bucket_strategies(c), ", "),
               profile.empty() ? "none, catalogue estimates" : "the launch profile");
  return [state](std::span<const int64_t> lengths) {
    timing::Scope scope(timing::Phase::data, "bucket_plan");
    const auto start = std::chrono::steady_clock::now();
    const plan::BucketPlan plan = state->planner->plan(lengths);
    std::vector<dataset::BucketShape> buckets;
    for (const plan::PlannedBucket& b : plan.buckets) {
      dataset::BucketShape shape = state->shape_of.at(b.strategy);
      shape.max_len = b.max_len.value_or(0);
      buckets.push_back(std::move(shape));
    }
    const double ms = 1e3 * std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::string described = describe(buckets);
    if (described != state->previous) {
      spdlog::info("parallel.auto: buckets planned: {} (predicted {:.4f} s; planned in {:.3f} ms for {} pieces)",
                   described, plan.predicted_s, ms, lengths.size());
      state->previous = std::move(described);
    }
    std::vector<std::string> priced;  // per bucket: its strategy, documents, tokens and predicted time
    for (const plan::PlannedBucket& b : plan.buckets)
      priced.push_back(fmt::format("{} {} docs {:.0f} tokens {:.4f} s", b.strategy, b.documents, b.tokens, b.predicted_s));
    spdlog::debug("parallel.auto: bucket plan of {} pieces in {:.3f} ms, step predicted {:.4f} s (the buckets' {:.4f} s "
                  "and the default's gradient sync and optimizer step); per bucket: {}",
                  lengths.size(), ms, plan.predicted_s + state->outside_s, plan.predicted_s, fmt::join(priced, "; "));
    return buckets;
  };
}

}  // namespace hetu::plan
