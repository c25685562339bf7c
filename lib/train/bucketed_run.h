// A layout per batch in hetu train ([[parallel.bucket]]): the rank's run under the default
// strategy becomes a run whose engine is a BucketedEngine (lib/runtime/bucketed_engine.h)
// over one lane per strategy the buckets name, fed by the job's documents cut into buckets
// (lib/dataset/bucket_batcher.h). Parameters, AdamW state, checkpoints and evaluation stay the
// default strategy's. With [parallel] auto = true the buckets come from `plan` each step
// (auto_buckets.h), with a lane for every strategy of the job.
//
//   runtime::StrategyRun run = bucketed_run(c, std::move(initial), build, layout_of, compute);
#pragma once

#include <functional>
#include <string>

#include "lib/config/job_config.h"
#include "lib/core/device.h"
#include "lib/dataset/bucket_batcher.h"
#include "lib/dataset/data_loader.h"
#include "lib/pipeline/parallel_layout.h"
#include "lib/runtime/strategy.h"

namespace hetu::train {

// `optimize`: the rank's run under "default"; `build(name)`: its run under strategy `name`
// (parameters allocated only: they are resharded in every step); `layout_of(name)`: that
// strategy's layout; `data`: the job's training data options (documents packing); `plan`:
// each step's buckets (empty: the job's [[parallel.bucket]]).
runtime::StrategyRun bucketed_run(const config::JobConfig& c, runtime::StrategyRun optimize,
                                  const std::function<runtime::StrategyRun(const std::string&)>& build,
                                  const std::function<pipeline::ParallelLayout(const std::string&)>& layout_of,
                                  const dataset::DataLoaderOptions& data, Device compute, dataset::BucketPlanFn plan = {});

}  // namespace hetu::train
