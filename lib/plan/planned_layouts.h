// The layouts `hetu plan` offers, as runnable job files priced by estimate_layout
// (layout_cost.h): plan_layouts runs the layout search of lib/plan (see Note [Layout search]
// in lib/plan/layout_search.cpp) on any cluster; enumerate_layouts lists every layout of the
// same space for small clusters (see Note [Exhaustive layout search]), the reference the
// search is tested against and what `hetu plan --exhaustive` prints.
//
//   PlanResult r = plan_layouts(loaded, profile, 5);    // best first, uniform included
//   std::vector<PlannedLayout> all = enumerate_layouts(loaded);   // every layout, best first
//   config::to_toml(r.ranked[0].job);                             // a runnable job file
#pragma once

#include <string>
#include <vector>

#include "lib/config/config.h"
#include "lib/plan/layout_cost.h"

namespace hetu::plan {

struct PlannedLayout {
  config::JobConfig job;     // the job with these explicit [parallel] groups
  LayoutEstimate estimate;
  bool fits = true;          // every device within its memory_gib
  bool uniform = false;      // what the dp/tp/pp shorthand can express: equal replicas and shares
  std::string summary;       // "fast:0 L0-3 tp1 x16 | slow:0 L0-3 tp1 x8 (1f1b)"
};

struct PlanResult {
  std::vector<PlannedLayout> ranked;  // the search's best first, then the best uniform one unless among them
  bool exact = false;                 // the whole space was searched (small clusters)
  int64_t layouts_priced = 0;         // complete layouts the search allocated shares for
};

// The `top` best layouts of the layout search and the best uniform one; clusters of at most
// `exact_devices` devices are searched whole. Throws UsageError when the job has no valid layout.
PlanResult plan_layouts(const config::LoadedConfig& loaded, const profile::Profile& profile = {}, int64_t top = 1, int64_t exact_devices = plan::SearchOptions{}.exact_devices);

// The job with a searched layout (devices as positions in node order) as its explicit
// [parallel] groups, checked by the job-file rules and priced by estimate_layout.
PlannedLayout planned_layout(const config::LoadedConfig& loaded, const plan::SearchedLayout& layout,
                             const profile::Profile& profile = {});

// Spaces past this many candidates are refused by the exhaustive listing.
inline constexpr int64_t kMaxExhaustiveCandidates = 200000;

// Every valid layout of the space, fitting ones first, each group by predicted step time
// (ties in enumeration order). Throws UsageError when the space exceeds the limit.
std::vector<PlannedLayout> enumerate_layouts(const config::LoadedConfig& loaded,
                                             const profile::Profile& profile = {});

}  // namespace hetu::plan
