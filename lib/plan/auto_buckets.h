// `[parallel] auto = true` with documents and [[parallel.strategy]] layouts: the buckets of
// every step planned from that step's global batch. The candidates are the job's strategies
// ("default", the layout planned at launch, and every [[parallel.strategy]]), priced once on
// the launch profile (document_strategies.h); each step the bucket planner
// (lib/plan/bucket_planner.h) cuts the batch's piece lengths into buckets and picks each one's
// strategy, and the bucketed engine runs that plan. Every rank reads the same global batch and
// plans from the same profile, so every rank reaches the same plan. A plan is logged when it
// differs from the previous step's (info), each step's planning time at debug level and in
// the trace ("bucket_plan").
//
//   dataset::BucketPlanFn plan = auto_bucket_plan(loaded, profile, layout_of);
//   dataset::BucketBatcher batcher(data, plan);   // plans in every next_step()
#pragma once

#include <functional>
#include <string>

#include "lib/config/config.h"
#include "lib/dataset/bucket_batcher.h"
#include "lib/pipeline/parallel_layout.h"
#include "lib/profile/profile_file.h"

namespace hetu::plan {

// The strategies every planned bucket may name: "default" and each [[parallel.strategy]].
std::vector<std::string> auto_bucket_strategies(const config::JobConfig& c);

// `layout_of(name)`: the layout of strategy `name` (its replicas' batch shares and micro-batches).
dataset::BucketPlanFn auto_bucket_plan(const config::LoadedConfig& loaded, const profile::Profile& profile,
                                  const std::function<pipeline::ParallelLayout(const std::string&)>& layout_of);

}  // namespace hetu::plan
