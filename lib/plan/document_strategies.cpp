// document_strategies: a job's layouts priced as strategies for documents.
#include "lib/plan/document_strategies.h"

#include "lib/plan/micro_batch_overhead.h"

namespace hetu::plan {

// The cluster's slowest link: what a strategy's parameters come in and gradients go back over.
plan::Link slowest_link(const config::LoadedConfig& loaded, const profile::Profile& profile) {
  const plan::SearchCluster cluster = search_cluster(loaded, profile);
  plan::Link slowest = cluster.links.at(0).at(0);
  for (const auto& row : cluster.links)
    for (const plan::Link& l : row)
      if (l.transfer_s(1e6) > slowest.transfer_s(1e6)) slowest = l;
  return slowest;
}

// A priced layout as a strategy for documents; `reshard` null: it holds the parameters.
plan::DocumentStrategy document_strategy(const std::string& name, const LayoutEstimate& e,
                                         const config::ParallelSection& parallel, int64_t seq_len,
                                         const plan::Link* reshard) {
  std::vector<std::vector<double>> memory;
  std::vector<int64_t> micro_batch;
  for (size_t r = 0; r < e.stages.size(); ++r) {
    memory.emplace_back();
    for (const StageEstimateInfo& info : e.stages[r]) memory.back().push_back(info.memory_bytes);
    micro_batch.push_back(parallel.replicas[r].micro_batch);
  }
  return plan::document_strategy(name, e.replicas, memory, micro_batch, seq_len, reshard);
}

void price_micro_batch_overhead(plan::DocumentStrategy& s, const config::LoadedConfig& under, const profile::Profile& profile,
                                const LayoutEstimate& estimate) {
  const std::vector<std::vector<plan::StageTimes>> fixed = micro_batch_overhead(under, profile, estimate);
  for (size_t r = 0; r < fixed.size(); ++r) s.replicas.at(r).fixed = fixed[r];
}

config::LoadedConfig under_strategy(const config::LoadedConfig& loaded, const std::string& name) {
  config::LoadedConfig under = loaded;
  under.config.parallel = loaded.config.strategy(name);
  return under;
}

// Every strategy of the job (default first), each its own layout's estimate, the others
// priced as compute copies beside the default's training state.
std::vector<plan::DocumentStrategy> job_strategies(const config::LoadedConfig& loaded, const profile::Profile& profile,
                                                   double memory_share) {
  const plan::Link link = slowest_link(loaded, profile);
  std::vector<std::string> names{config::kDefaultStrategy};
  for (const config::StrategySection& s : loaded.config.strategies) names.push_back(s.name);
  std::vector<plan::DocumentStrategy> out;
  for (const std::string& name : names) {
    const config::LoadedConfig under = under_strategy(loaded, name);
    const LayoutEstimate estimate = estimate_layout(under, profile);
    out.push_back(document_strategy(name, estimate, under.config.parallel, loaded.config.training.seq_len,
                                    name == config::kDefaultStrategy ? nullptr : &link));
    price_micro_batch_overhead(out.back(), under, profile, estimate);
    if (out.size() > 1) plan::price_as_compute_copy(out.back(), out.front(), memory_share);
  }
  return out;
}

std::vector<plan::DocumentStrategy> searched_strategies(const config::LoadedConfig& loaded, const profile::Profile& profile,
                                                        const std::vector<PlannedLayout>& ranked) {
  const plan::Link link = slowest_link(loaded, profile);
  std::vector<plan::DocumentStrategy> out;
  for (size_t i = 0; i < ranked.size(); ++i) {
    if (!ranked[i].fits) continue;
    out.push_back(document_strategy(std::to_string(i + 1), ranked[i].estimate, ranked[i].job.parallel,
                                    loaded.config.training.seq_len, out.empty() ? nullptr : &link));
    config::LoadedConfig under = loaded;
    under.config = ranked[i].job;
    price_micro_batch_overhead(out.back(), under, profile, ranked[i].estimate);
    if (out.size() > 1) plan::price_as_compute_copy(out.back(), out.front());
  }
  return out;
}

}  // namespace hetu::plan
