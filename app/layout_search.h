// Exhaustive layout search for small clusters (see Note [Exhaustive layout search]): every
// layout of a defined space over the job's cluster, each checked like a job file and priced
// by the catalogue estimate (layout_cost.h), ranked by predicted step time.
//
//   std::vector<PlannedLayout> ranked = search_layouts(loaded);   // best first
//   config::to_toml(ranked[0].job);                              // a runnable job file
#pragma once

#include <string>
#include <vector>

#include "app/config/config.h"
#include "app/layout_cost.h"

namespace hetu::app {

struct PlannedLayout {
  config::JobConfig job;     // the job with these explicit [parallel] groups
  LayoutEstimate estimate;
  bool fits = true;          // every device within its memory_gib
  bool uniform = false;      // what the dp/tp/pp shorthand can express: equal replicas and shares
  std::string summary;       // "fast:0 L0-3 tp1 x16 | slow:0 L0-3 tp1 x8 (1f1b)"
};

// Layouts past this many candidates are refused (the scalable search is still to come).
inline constexpr int64_t kMaxExhaustiveCandidates = 200000;

// Every valid layout of the space, fitting ones first, each group by predicted step time
// (ties in enumeration order). Throws UsageError when the space exceeds the limit.
std::vector<PlannedLayout> search_layouts(const config::LoadedConfig& loaded,
                                          const Profile& profile = {});

}  // namespace hetu::app
