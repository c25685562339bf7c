// Planning a job's layout at launch (`[parallel] auto = true`).
#include "lib/plan/auto_layout.h"

#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "lib/plan/planned_layouts.h"
#include "lib/profile/cluster_profile.h"
#include "lib/profile/profile_file.h"
#include "lib/util/atomic_file.h"
#include "lib/util/error.h"

namespace hetu::plan {
namespace {

// The cluster measured on every rank (its numbers all-reduced, the same everywhere), planned
// from as its file states it (to_toml's rounding), so that hetu plan on the file rank 0 writes
// to `out` ranks the layouts exactly as this run does.
profile::Profile profile_here(const config::LoadedConfig& loaded, const launch::RankMap& ranks, const MpiSession& mpi,
                     const std::string& out) {
  const std::string text = to_toml(profile::profile_launched(loaded, ranks, mpi.world_size()),
                                   fmt::format("# hetu profile of {} measured at launch by [parallel] auto on {} "
                                               "rank(s); hetu plan --profile reads it\n",
                                               loaded.config.source, mpi.world_size()));
  if (mpi.rank() == 0 && !out.empty()) {
    write_file_atomic(out, text);
    spdlog::info("parallel.auto: wrote the profile to {}", out);
  }
  return profile::read_profile_text(text, out.empty() ? "the launch profile" : out);
}

}  // namespace

config::LoadedConfig plan_at_launch(const config::LoadedConfig& loaded, const launch::RankMap& ranks, const MpiSession& mpi,
                                    const std::string& profile_out, profile::Profile* used) {
  const config::ParallelSection& parallel = loaded.config.parallel;
  HT_CHECK(parallel.auto_plan, "plan_at_launch: {} does not set [parallel] auto", loaded.config.source);
  profile::Profile profile;
  if (!parallel.profile.empty()) {
    profile = profile::read_profile_file(parallel.profile);
    spdlog::info("parallel.auto: planning from the profile {}", parallel.profile);
  } else {
    spdlog::info("parallel.auto: profiling the cluster on all {} rank(s) first (no parallel.profile given)",
                 mpi.world_size());
    profile = profile_here(loaded, ranks, mpi, profile_out);
    for (const std::string& line : profile::describe_profile(profile)) spdlog::info("profile: {}", line);
  }
  config::LoadedConfig plannable = loaded;
  plannable.config.straggler = {};  // its rule wants [parallel] auto, which the planned jobs do not set
  const PlanResult found = plan_layouts(plannable, profile, 1);
  if (used != nullptr) *used = profile;
  const std::vector<PlannedLayout>& ranked = found.ranked;
  HT_USAGE_CHECK(!ranked.empty() && ranked[0].fits, "parallel.auto: no layout of {} fits the devices' memory "
                 "(hetu plan {} lists the candidates)", loaded.config.source, loaded.config.source);
  const PlannedLayout& best = ranked[0];
  double peak = 0;
  for (const auto& replica : best.estimate.prediction.peak_bytes)
    for (double bytes : replica) peak = std::max(peak, bytes);
  spdlog::info("parallel.auto: chose the best of {} layouts: {} (predicted step {:.4f} s, peak {:.3f} GiB per device)",
               found.layouts_priced, best.summary, best.estimate.prediction.step_s, peak / double(1 << 30));
  config::LoadedConfig planned = loaded;
  planned.config = best.job;
  planned.config.straggler = loaded.config.straggler;  // re-plans from the profile planned from
  if (planned.config.straggler.enabled) planned.config.straggler.profile = parallel.profile.empty() ? profile_out : parallel.profile;
  return planned;
}

}  // namespace hetu::plan
