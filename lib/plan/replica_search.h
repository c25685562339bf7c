// The pieces the layout search (layout_search.h) is built from: where a stage's devices sit
// in the cluster and which links it uses (ClusterIndex), one replica with its layer split and
// its pipeline time per number of micro-batches (ReplicaCandidate), the best layer split of a
// replica over given stages (branch and bound, see Note [Best layer split]), the min-max
// allocation of the batch's micro-batches over replicas (see Note [Share allocation]) and
// lower bounds on a step's time.
//
//   ClusterIndex index(cluster);
//   ReplicaCandidate r = make_replica(index, job, kind, {index.place(0, 2), index.place(2, 2)}, {2, 2});
//   r.pipeline_s(4);   // 4 micro-batches; infinity when a stage does not fit its memory
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "lib/plan/layout_search.h"

namespace hetu::plan {

inline constexpr double kNoFit = std::numeric_limits<double>::infinity();

// A stage's place: consecutive devices and what the cost model needs to know of them.
struct StagePlace {
  int64_t first_device = 0, devices = 1;
  int64_t first_node = 0, last_node = 0;
  int64_t type = 0;     // the type of its first device (stage_cost prices a stage by its slowest)
  Link tp;              // the slowest link between two of its devices
  Link everyone;        // the slowest link from its devices to any device of the cluster
};

class ClusterIndex {
 public:
  explicit ClusterIndex(const SearchCluster& cluster);  // throws UsageError when inconsistent
  const SearchCluster& cluster() const { return cluster_; }
  int64_t devices() const { return static_cast<int64_t>(node_of_.size()); }
  int64_t node_of(int64_t device) const { return node_of_[static_cast<size_t>(device)]; }
  int64_t first_device(int64_t node) const { return first_device_[static_cast<size_t>(node)]; }
  StagePlace place(int64_t first_device, int64_t devices) const;
  // The smallest memory of the place's devices (0: unbounded).
  double memory_bytes(const StagePlace& place) const;
  // The slowest link between any device of `a` and any of `b` (compared at a megabyte; the first of equals).
  Link between(const StagePlace& a, const StagePlace& b) const;

 private:
  const SearchCluster& cluster_;
  std::vector<int64_t> node_of_, first_device_;
  std::vector<Link> slowest_from_node_;  // per node: its slowest link to any node
};

// The slower of two links at a megabyte (a when equal).
Link slower(const Link& a, const Link& b);

// The links of a stage's gradient sync among a layout's replicas (Note [Hierarchical gradient
// sync]): the slowest between its nodes and the other holders' nodes, the most holders on one
// node and the slowest link within such a node. Default: one ring on place.everyone.
struct SyncLinks {
  Link between;
  int64_t per_node = 1;
  Link within;
};

// One stage's cost: `layers` layers from `first_layer`, `replicas` replicas syncing gradients,
// at the pace of the slowest device type among the place's nodes (a tp group waits for its
// slowest member at every collective). `next_place`: the next stage's place (its tp ranks
// receive the activation in slices and all-gather them, Note [Stage edges]), nullptr on the last.
StageCost stage_cost(const ClusterIndex& index, const SearchJob& job, const StagePlace& place, const Link& next,
                     const StagePlace* next_place, int64_t first_layer, int64_t layers, bool first, bool last,
                     int64_t replicas, const SyncLinks* sync = nullptr);

// A stage of a layout as the gradient sync sees it: its place and layers.
struct HeldLayers {
  const StagePlace* place = nullptr;
  int64_t first_layer = 0, last_layer = 0;
};

// The SyncLinks of the stage at `own` whose first layer is `layer`, among the layout's
// `stages` (every replica's; the stage's first layer stands for its parameters).
SyncLinks sync_links(const ClusterIndex& index, const std::vector<HeldLayers>& stages, const StagePlace& own,
                     int64_t layer);

// True when tp is a valid degree for a stage (first or last: also the end rule).
bool tp_allowed(const SearchJob& job, int64_t tp, bool holds_an_end);

struct ReplicaCandidate {
  pipeline::ScheduleKind schedule = pipeline::ScheduleKind::one_f_one_b;
  std::vector<StagePlace> places;
  std::vector<Link> next;          // per stage: to the next stage (unused on the last)
  std::vector<int64_t> layers;     // per stage: layer count
  std::vector<StageCost> costs;    // with one replica (times, memory; the sync is priced per layout)
  std::vector<double> memory_bytes;  // per stage: a device's memory (0: unbounded)
  double bottleneck_s = 0;         // max over stages of forward + backward: pipeline_s(m) >= m x it
  std::vector<double> pipeline_by_m;  // memo: [m] the pipeline time, NaN until computed
  // Past this many micro-batches the pipeline time is extrapolated from the exact ones of the
  // last 2 x stages (the search by runs; see Note [Layout search]); memory is always exact.
  int64_t exact_up_to = std::numeric_limits<int64_t>::max();

  double pipeline_s(int64_t micro_batches);  // kNoFit when a stage's memory does not hold it
  // The slowest stage's sync over `replicas` copies of this one, one ring on place.everyone
  // (how the search by runs ranks a replica shape on its own; layouts use layout_sync_s).
  double sync_s(const ClusterIndex& index, const SearchJob& job, int64_t replicas) const;
  double optimizer_s() const;
};

// The step's gradient sync of a whole layout: its slowest stage's, each stage summing with the
// stages of the other replicas that hold its layers, within nodes first (SyncLinks).
double layout_sync_s(const ClusterIndex& index, const SearchJob& job, const std::vector<ReplicaCandidate*>& replicas);

ReplicaCandidate make_replica(const ClusterIndex& index, const SearchJob& job, pipeline::ScheduleKind schedule,
                              std::vector<StagePlace> places, std::vector<int64_t> layers);

// The layer split over `places` with the shortest pipeline at `micro_batches` among those whose
// stages fit; nullopt when none fits. At most `max_leaves` splits besides the DP incumbent are
// timed (the best of those is returned: exact when the search ends before). The candidates it
// makes extrapolate past `exact_up_to` micro-batches (ReplicaCandidate::exact_up_to).
std::optional<ReplicaCandidate> best_layer_split(const ClusterIndex& index, const SearchJob& job,
                                                 pipeline::ScheduleKind schedule, const std::vector<StagePlace>& places,
                                                 int64_t micro_batches, int64_t max_leaves,
                                                 int64_t exact_up_to = std::numeric_limits<int64_t>::max());

// Micro-batches per replica (each >= 1, summing to `micro_batches`) minimizing the longest
// pipeline; `replicas` may repeat one candidate. Returns that pipeline time (kNoFit when none).
double allocate_shares(const std::vector<ReplicaCandidate*>& replicas, int64_t micro_batches,
                       std::vector<int64_t>& shares);

// A lower bound on one micro-batch's forward + backward over the whole model on one device of
// any type present (the sum over the model's pieces of the fastest type's time for it).
double model_work_lower_bound_s(const ClusterIndex& index, const SearchJob& job);

}  // namespace hetu::plan
