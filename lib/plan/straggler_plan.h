// The cost model's side of straggler re-planning (lib/runtime/straggler.h) for hetu train:
// the job's cluster as the layout search sees it (layout_cost.h search_cluster, from the
// launch plan's profile or straggler.profile), with each device's compute slowed by the
// factor measured for its rank (a slowed device becomes a node part of its own, so one slow
// device among alike ones is priced alone), the current layout priced on it and the best
// layout searched on it (lib/plan search_layouts). A planned layout is run as a strategy
// named "straggler-N", built by the caller.
//
//   auto watch = make_straggler_watch(loaded, profile, ranks, host_comm, build);   // every rank
//   options.straggler = watch;
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "lib/config/config.h"
#include "lib/hspmd/communicator.h"
#include "lib/launch/rank_map.h"
#include "lib/profile/profile_file.h"
#include "lib/runtime/straggler.h"

namespace hetu::plan {

// Builds this rank's run of `job` under the strategy `name` (parameters allocated, not filled).
using BuildStrategyRun = std::function<runtime::StrategyRun(std::string name, const config::JobConfig& job)>;

// Throws UsageError (naming straggler.enabled) when the job's layout is one the planner cannot
// price: a stage's devices not consecutive in node order, replicas with different schedules
// or a micro_batch other than training.micro_batch, or GPU devices (compute is measured as
// the time between a rank's messages, which on a GPU is not its compute).
void check_straggler_job(const config::LoadedConfig& loaded);

// The watch of `[straggler]` over `host_comm` (an emulating communicator: with_emulation's
// measure_compute, whose compute clock it reads).
std::shared_ptr<runtime::StragglerWatch> make_straggler_watch(const config::LoadedConfig& loaded, const profile::Profile& profile,
                                                              const launch::RankMap& ranks, Communicator& host_comm,
                                                              BuildStrategyRun build);

}  // namespace hetu::plan
