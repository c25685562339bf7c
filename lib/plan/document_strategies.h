// A job's layouts as strategies for documents (lib/plan/document_cost.h): each layout priced
// by the cost model (layout_cost.h) on a profile, its devices' memory and micro-batches, and
// the link its parameters come in over (the cluster's slowest). What hetu plan shows per-batch
// layouts from and what `[parallel] auto = true` plans each step's buckets from (auto_buckets.h).
//
//   std::vector<plan::DocumentStrategy> s = job_strategies(loaded, profile);  // "default" first
//   std::vector<plan::DocumentStrategy> t = searched_strategies(loaded, profile, plan_layouts(loaded).ranked);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/config/config.h"
#include "lib/plan/document_cost.h"
#include "lib/plan/layout_cost.h"
#include "lib/plan/planned_layouts.h"
#include "lib/profile/profile_file.h"

namespace hetu::plan {

// The cluster's slowest link: what a strategy's parameters come in and gradients go back over.
plan::Link slowest_link(const config::LoadedConfig& loaded, const profile::Profile& profile);

// A priced layout as a strategy for documents; `reshard` null: it holds the parameters.
plan::DocumentStrategy document_strategy(const std::string& name, const LayoutEstimate& e,
                                         const config::ParallelSection& parallel, int64_t seq_len,
                                         const plan::Link* reshard);

// Sets each replica's fixed cost per micro-batch (micro_batch_overhead.h) of `s`, priced from
// `estimate` (estimate_layout of `under`, the job under that layout, on `profile`).
void price_micro_batch_overhead(plan::DocumentStrategy& s, const config::LoadedConfig& under, const profile::Profile& profile,
                                const LayoutEstimate& estimate);

// The job with [parallel] replaced by strategy `name`'s layout (what that strategy is priced as).
config::LoadedConfig under_strategy(const config::LoadedConfig& loaded, const std::string& name);

// Every strategy of the job ("default" first, then [[parallel.strategy]] in file order), each
// its own layout's estimate with its micro-batches' fixed cost (micro_batch_overhead.h); only "default" holds the parameters, the others are compute
// copies beside its training state (plan::price_as_compute_copy, within `memory_share` of
// their devices' memory).
std::vector<plan::DocumentStrategy> job_strategies(const config::LoadedConfig& loaded, const profile::Profile& profile,
                                                   double memory_share = plan::kComputeCopyMemoryShare);

// The layouts the search ranked that fit, as strategies named by rank ("1" holds the
// parameters, the others are compute copies beside its training state).
std::vector<plan::DocumentStrategy> searched_strategies(const config::LoadedConfig& loaded, const profile::Profile& profile,
                                                        const std::vector<PlannedLayout>& ranked);

}  // namespace hetu::plan
