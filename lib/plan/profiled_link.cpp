// Choosing a profile's link curve by device types and GPU counts. See lib/plan/profiled_link.h.
#include "lib/plan/profiled_link.h"

#include <limits>

namespace hetu::plan {
namespace {

// How far `stated` (0: any) is from `wanted`: 0 when equal or open, then counts below it by
// their distance, then counts above it after every count below.
int64_t count_distance(int64_t stated, int64_t wanted) {
  if (stated == 0 || stated == wanted) return 0;
  return stated < wanted ? wanted - stated : (int64_t{1} << 20) + stated - wanted;
}

// The match of `l` as the path from -> to (nullopt-like max when it does not match), lower is better.
int64_t match_cost(const profile::LinkProfile& l, bool between, const LinkEnd& from, const LinkEnd& to) {
  constexpr int64_t kNoMatch = std::numeric_limits<int64_t>::max();
  if (l.device_type != from.type) return kNoMatch;
  if (!between) return count_distance(l.gpus, from.gpus);
  if (!l.peer_type.empty() && l.peer_type != to.type) return kNoMatch;
  const int64_t unnamed_peer = l.peer_type.empty() ? int64_t{1} << 42 : 0;
  return unnamed_peer + (count_distance(l.gpus, from.gpus) << 21) + count_distance(l.peer_gpus, to.gpus);
}

}  // namespace

const profile::LinkProfile* profiled_curve(const profile::Profile& profile, const char* scope, const LinkEnd& from,
                                           const LinkEnd& to) {
  const bool between = std::string(scope) == "between";
  const profile::LinkProfile* best = nullptr;
  int64_t best_cost = std::numeric_limits<int64_t>::max();
  for (const profile::LinkProfile& l : profile.links) {
    if (!l.hosts.empty() || l.scope != scope) continue;
    int64_t cost = match_cost(l, between, from, to);
    if (between) cost = std::min(cost, match_cost(l, between, to, from));
    if (cost == std::numeric_limits<int64_t>::max()) continue;
    // Equal matches (both ends' own curves, or both directions of a pair): the slower.
    const bool slower = best != nullptr && cost == best_cost && curve_link(l).transfer_s(1e6) > curve_link(*best).transfer_s(1e6);
    if (cost < best_cost || slower) best = &l, best_cost = cost;
  }
  return best;
}

Link curve_link(const profile::LinkProfile& l) {
  if (l.bandwidth_gbs_poly.empty()) return {l.gbps > 0 ? l.gbps * 1e9 / 8 : 0.0, l.latency_us * 1e-6};
  return {0, l.latency_us * 1e-6, {l.bandwidth_gbs_poly, l.max_bytes_per_s}};
}

}  // namespace hetu::plan
