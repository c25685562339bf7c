// `[parallel] auto = true`: hetu train plans the layout at launch. From the profile file the
// job names (`[parallel] profile`), or, without one, from a profile of the cluster measured
// first on all ranks at once (cluster_profile.h, emulation applied), the layout search
// (layout_search.h) ranks every layout; the best that fits is the one trained. Every rank
// plans from the same profile, so every rank chooses the same layout. The choice is logged
// (its summary, predicted step time and peak memory) and written to config.resolved.toml as
// explicit groups; `hetu plan --profile P` on the same profile prints the same best layout
// (a profile measured at launch is written to out_dir/profile.toml for that).
//
//   loaded = plan_at_launch(loaded, ranks, mpi, out_dir + "/profile.toml");  // collective
#pragma once

#include "lib/config/config.h"
#include "lib/hspmd/mpi_session.h"
#include "lib/launch/rank_map.h"
#include "lib/profile/profile_file.h"

namespace hetu::plan {

// The job with its planned [parallel] groups (auto cleared), on every rank of `mpi`. A profile measured here is written to `profile_out` by rank 0 (when
// not empty), so that `hetu plan --profile` can show the same choice later; `used`, when
// given, receives the profile planned from. Throws UsageError when no layout fits the
// devices' memory.
config::LoadedConfig plan_at_launch(const config::LoadedConfig& loaded, const launch::RankMap& ranks, const MpiSession& mpi,
                                    const std::string& profile_out, profile::Profile* used = nullptr);

}  // namespace hetu::plan
