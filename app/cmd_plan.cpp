// `hetu plan JOB [--set k=v]... [--top K] [--out planned.toml] [--json] [--exhaustive]`: the
// best layouts of the layout search (lib/plan/planned_layouts.h; `--exhaustive`: every layout of the
// space) priced from catalogue estimates, a ranked table (the best uniform layout always
// shown), the best written as a runnable job file. `--evaluate`:
// the job's own layout only (lib/plan/layout_cost.h): per stage its forward and backward time per
// micro-batch, its peak memory per device against the device's memory and its bubble; the
// step time, tokens/s and MFU. Without --profile the cluster's CPU types are profiled in this
// process first (lib/profile/cluster_profile.h); `--profile none` prices everything from the catalogue.
// A job with `data.packing = "documents"` also gets the per-batch layouts the bucket planner
// (lib/plan/bucket_planner.h) picks for a long-tailed batch, a table per bucket next to the
// best single strategy: from the ranked layouts that fit (named by rank), or with --evaluate
// from the job's own strategies (with [[parallel.strategy]] layouts).
#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "app/commands.h"
#include "lib/ops/ops.h"
#include "lib/plan/bucket_preview.h"
#include "lib/plan/document_strategies.h"
#include "lib/plan/layout_cost.h"
#include "lib/plan/planned_layouts.h"
#include "lib/profile/cluster_profile.h"
#include "lib/util/atomic_file.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace hetu::app {
namespace {

constexpr double kGiB = double(1 << 30);

bool fits(const plan::StageEstimateInfo& info, double peak_bytes) {
  return info.memory_bytes <= 0 || peak_bytes <= info.memory_bytes;
}

nlohmann::json to_json(const plan::LayoutEstimate& e) {
  const plan::LayoutPrediction& p = e.prediction;
  nlohmann::json replicas = nlohmann::json::array();
  for (size_t r = 0; r < e.replicas.size(); ++r) {
    nlohmann::json stages = nlohmann::json::array();
    for (size_t s = 0; s < e.stages[r].size(); ++s) {
      const plan::StageEstimateInfo& info = e.stages[r][s];
      const plan::StageCost& cost = e.replicas[r].stages[s];
      stages.push_back({{"devices", info.devices}, {"device_type", info.device_type},
                        {"compute", info.measured ? "measured" : "estimated"},
                        {"layers", fmt::format("{}-{}", info.first_layer, info.last_layer)}, {"tp", info.tp},
                        {"forward_s", cost.times.forward_s}, {"backward_s", cost.times.backward_s},
                        {"send_s", cost.times.send_s}, {"micro_batches_in_flight", p.in_flight[r][s]},
                        {"predicted_peak_gib", p.peak_bytes[r][s] / kGiB}, {"memory_gib", info.memory_bytes / kGiB},
                        {"fits", fits(info, p.peak_bytes[r][s])}, {"bubble", p.bubble[r][s]}});
    }
    replicas.push_back({{"schedule", pipeline::to_string(e.replicas[r].schedule)},
                        {"micro_batches", e.replicas[r].micro_batches}, {"pipeline_s", p.replica_pipeline_s[r]},
                        {"stages", stages}});
  }
  return {{"predicted_step_s", p.step_s}, {"pipeline_s", p.pipeline_s}, {"grad_sync_s", p.grad_sync_s},
          {"optimizer_s", p.optimizer_s}, {"tokens_per_s", e.tokens_per_step / p.step_s},
          {"mfu", e.flops_per_token * e.tokens_per_step / p.step_s / e.peak_flops}, {"source", "catalogue estimate"},
          {"replicas", replicas}};
}

void print_table(const plan::LayoutEstimate& e) {
  const plan::LayoutPrediction& p = e.prediction;
  std::printf("catalogue estimate: compute at %.0f%% of a GPU's and %.0f%% of a CPU's catalogue peak, AdamW "
              "at the memory bandwidth, links as emulated, profiled or assumed (see docs/config.md, hetu plan)\n",
              100 * plan::kGpuEfficiency, 100 * plan::kCpuEfficiency);
  for (size_t r = 0; r < e.replicas.size(); ++r) {
    std::printf("replica %zu: %s, %lld micro-batches, pipeline %.4f s\n", r,
                pipeline::to_string(e.replicas[r].schedule).c_str(),
                static_cast<long long>(e.replicas[r].micro_batches), p.replica_pipeline_s[r]);
    for (size_t s = 0; s < e.stages[r].size(); ++s) {
      const plan::StageEstimateInfo& info = e.stages[r][s];
      const plan::StageCost& cost = e.replicas[r].stages[s];
      const std::string memory = info.memory_bytes > 0 ? fmt::format("{:.2f}", info.memory_bytes / kGiB) : "-";
      std::printf("  stage %zu  %-14s %-10s %-9s layers %lld-%lld  tp %lld  fwd %.2f ms  bwd %.2f ms  peak %.3f / %s GiB%s"
                  "  bubble %.0f%%\n",
                  s, info.devices.c_str(), info.device_type.c_str(), info.measured ? "measured" : "estimated", static_cast<long long>(info.first_layer),
                  static_cast<long long>(info.last_layer), static_cast<long long>(info.tp),
                  1e3 * cost.times.forward_s, 1e3 * cost.times.backward_s, p.peak_bytes[r][s] / kGiB, memory.c_str(),
                  fits(info, p.peak_bytes[r][s]) ? "" : " DOES NOT FIT", 100 * p.bubble[r][s]);
    }
  }
  std::printf("predicted step %.4f s (pipeline %.4f, gradient sync %.4f, optimizer %.4f) | %.0f tokens/s | MFU %.1f%%\n",
              p.step_s, p.pipeline_s, p.grad_sync_s, p.optimizer_s, e.tokens_per_step / p.step_s,
              100 * e.flops_per_token * e.tokens_per_step / p.step_s / e.peak_flops);
}

// The bucket planner's per-batch layouts on a long-tailed batch (lib/plan/bucket_preview.h),
// as JSON, and printed when `print`.
nlohmann::json plan_buckets(const config::LoadedConfig& loaded, std::vector<plan::DocumentStrategy> strategies,
                            bool print) {
  const config::JobConfig& c = loaded.config;
  const plan::BucketPreview preview = plan::preview_buckets(loaded, std::move(strategies));
  const plan::BucketPlan& plan = preview.plan;
  const std::vector<int64_t>& lengths = preview.lengths;
  const double plan_ms = preview.plan_ms;
  const double single_s = preview.best_single_s;
  nlohmann::json buckets = nlohmann::json::array();
  for (const plan::PlannedBucket& b : plan.buckets) {
    buckets.push_back({{"max_len", b.max_len ? nlohmann::json(*b.max_len) : nlohmann::json(nullptr)},
                       {"strategy", b.strategy}, {"documents", b.documents}, {"tokens", b.tokens},
                       {"predicted_s", b.predicted_s}});
  }
  if (print) {
    std::printf("per-batch layouts (data.packing = \"documents\"): %zu long-tailed documents of up to %lld tokens "
                "(seed %llu), planned in %.2f ms; compute and switches only (gradient sync and optimizer as above)\n",
                lengths.size(), static_cast<long long>(c.training.seq_len), static_cast<unsigned long long>(c.job.seed),
                plan_ms);
    std::printf("  %6s  %8s  %-14s  %9s  %9s  %11s\n", "bucket", "max_len", "strategy", "documents", "tokens", "predicted s");
    for (size_t i = 0; i < plan.buckets.size(); ++i) {
      const plan::PlannedBucket& b = plan.buckets[i];
      std::printf("  %6zu  %8s  %-14s  %9lld  %9.0f  %11.4f\n", i, b.max_len ? std::to_string(*b.max_len).c_str() : "-",
                  b.strategy.c_str(), static_cast<long long>(b.documents), b.tokens, b.predicted_s);
    }
    std::printf("  buckets %.4f s against %.4f s for the best single strategy (%s): %.2fx\n", plan.predicted_s, single_s,
                preview.best_single_strategy.c_str(), single_s / plan.predicted_s);
  }
  return {{"buckets", buckets}, {"predicted_s", plan.predicted_s}, {"best_single_strategy", preview.best_single_strategy},
          {"best_single_s", single_s}, {"documents", lengths.size()}, {"plan_ms", plan_ms}};
}

double mfu(const plan::LayoutEstimate& e) { return e.flops_per_token * e.tokens_per_step / e.prediction.step_s / e.peak_flops; }

double max_bubble(const plan::LayoutPrediction& p) {
  double most = 0;
  for (const auto& replica : p.bubble)
    for (double b : replica) most = std::max(most, b);
  return most;
}

int run_search(const PlanOptions& options, const config::LoadedConfig& loaded,
               const profile::Profile& profile) {
  std::vector<plan::PlannedLayout> ranked;
  std::string how;
  if (options.exhaustive) {
    ranked = plan::enumerate_layouts(loaded, profile);
    how = fmt::format("{} layouts listed exhaustively", ranked.size());
  } else {
    plan::PlanResult found = plan::plan_layouts(loaded, profile, options.top);
    ranked = std::move(found.ranked);
    how = fmt::format("the layout search ({}, {} layouts' shares allocated)",
                      found.exact ? "exact: the whole space" : "by runs of alike nodes", found.layouts_priced);
  }
  HT_USAGE_CHECK(!ranked.empty(), "hetu plan: no valid layout of {} for this cluster", loaded.config.source);
  // With documents, the bucket planner over the ranked layouts that fit (what auto picks from).
  const bool documents = loaded.config.data.packing == config::Packing::documents && !options.exhaustive;
  std::vector<plan::DocumentStrategy> candidates = documents ? plan::searched_strategies(loaded, profile, ranked)
                                                             : std::vector<plan::DocumentStrategy>{};
  if (options.json) {
    nlohmann::json all = nlohmann::json::array();
    for (const plan::PlannedLayout& l : ranked) {
      nlohmann::json j = to_json(l.estimate);
      j["layout"] = l.summary;
      j["fits"] = l.fits;
      j["uniform"] = l.uniform;
      all.push_back(std::move(j));
    }
    nlohmann::json out{{"candidates", all}, {"search", how}, {"source", "catalogue estimate"}};
    if (!candidates.empty()) out["per_batch_layouts"] = plan_buckets(loaded, std::move(candidates), false);
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("hetu plan %s: %s (%s; see docs/config.md)\n", loaded.config.source.c_str(), how.c_str(),
                profile.empty() ? "catalogue estimates" : "measured times of the profiled types, catalogue estimates "
                                                           "for the rest");
    std::printf("%4s  %10s  %10s  %6s  %8s  %9s  %s\n", "rank", "step s", "tokens/s", "MFU", "bubble", "peak GiB",
                "layout");
    auto row = [&](size_t i) {
      const plan::PlannedLayout& l = ranked[i];
      const plan::LayoutPrediction& p = l.estimate.prediction;
      double peak = 0;
      for (const auto& replica : p.peak_bytes)
        for (double b : replica) peak = std::max(peak, b);
      std::printf("%4zu  %10.4f  %10.0f  %5.1f%%  %7.0f%%  %9.3f  %s%s%s\n", i + 1, p.step_s,
                  l.estimate.tokens_per_step / p.step_s, 100 * mfu(l.estimate), 100 * max_bubble(p), peak / kGiB,
                  l.summary.c_str(), l.uniform ? " [uniform]" : "", l.fits ? "" : " DOES NOT FIT");
    };
    const size_t top = std::min(ranked.size(), static_cast<size_t>(std::max<int64_t>(1, options.top)));
    for (size_t i = 0; i < top; ++i) row(i);
    for (size_t i = top; i < ranked.size(); ++i) {
      if (ranked[i].uniform) {
        std::printf("   ...\n");
        row(i);
        break;
      }
    }
    if (!candidates.empty()) plan_buckets(loaded, std::move(candidates), true);
  }
  if (!options.out.empty()) {
    write_file_atomic(options.out, config::to_toml(ranked[0].job));
    if (!options.json) std::printf("wrote the best layout to %s\n", options.out.c_str());
  }
  return 0;
}

// --profile P: the file; none: nothing measured; no --profile: the CPU types of the cluster
// profiled in this process (this CPU x each type's emulate_slowdown), GPU types estimated.
profile::Profile plan_profile(const PlanOptions& options, const config::LoadedConfig& loaded) {
  if (options.profile == "none") return {};
  if (!options.profile.empty()) return profile::read_profile_file(options.profile);
  std::vector<std::string> cpu_types;  // each once, in node order
  for (const config::NodeSection& node : loaded.config.cluster.nodes) {
    const config::DeviceProfile* type = loaded.catalog.find(node.device_type);
    if (type->kind == config::DeviceKind::cpu && std::find(cpu_types.begin(), cpu_types.end(), type->name) == cpu_types.end()) {
      cpu_types.push_back(type->name);
    }
  }
  if (cpu_types.empty()) return {};
  ops::set_num_threads(static_cast<int>(loaded.config.training.threads));
  profile::Profile profile = profile::profile_one_process(loaded);
  // (--json says it per stage: "compute": "measured" or "estimated".)
  if (!options.json) spdlog::info("hetu plan: compute of {} measured in this process (this CPU x each type's emulate_slowdown; "
                                  "hetu profile under mpirun measures every rank at once), the rest estimated from the "
                                  "catalogue (--profile none: all of it)", join(cpu_types, ", "));
  return profile;
}

}  // namespace

int run_plan(const PlanOptions& options) {
  init_logging({0, options.log_level, "", true});  // the console is stderr: stdout is the table or JSON
  const config::LoadedConfig loaded = load_job(options);
  const profile::Profile profile = plan_profile(options, loaded);
  if (!options.evaluate) return run_search(options, loaded, profile);
  if (loaded.config.parallel.auto_plan && !options.json) {
    spdlog::warn("{}: [parallel] auto plans the layout at launch; --evaluate prices data parallelism over every "
                 "device (hetu plan without --evaluate shows what auto would choose)", loaded.config.source);
  }
  const plan::LayoutEstimate estimate = plan::estimate_layout(loaded, profile);
  const bool buckets = loaded.config.data.packing == config::Packing::documents && !loaded.config.strategies.empty();
  if (options.json) {
    nlohmann::json j = to_json(estimate);
    if (buckets) j["per_batch_layouts"] = plan_buckets(loaded, plan::job_strategies(loaded, profile), false);
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("hetu plan --evaluate %s\n", loaded.config.source.c_str());
    print_table(estimate);
    if (buckets) plan_buckets(loaded, plan::job_strategies(loaded, profile), true);
  }
  return 0;
}

}  // namespace hetu::app
