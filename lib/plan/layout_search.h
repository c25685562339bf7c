// The layout search of `hetu plan`: the best layouts of a cluster for a job, found with
// symmetry, branch and bound and an exact share allocation instead of listing every layout
// (see Note [Layout search] in layout_search.cpp). The cluster is plain data (device types
// with their rates, nodes in order, a link for every pair of nodes), so the search knows
// nothing of job files; app/ builds it from one and turns the result back into one.
//
//   SearchResult r = search_layouts(cluster, job, {.top = 5});
//   r.best[0].prediction.step_s;  r.best[0].replicas[1].stages[0].first_device;
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/plan/cost_model.h"
#include "lib/plan/stage_estimate.h"

namespace hetu::plan {

struct SearchDeviceType {
  std::string name;
  DeviceRates rates;        // flops_per_s, memory_bytes_per_s, measured; the links come from the cluster
  double memory_bytes = 0;  // per device; 0: unbounded
  // Times measured on one rank of a tp group of `tp` devices (includes_tp), which replace
  // rates.measured for stages of that tp (tp splits rates.measured for the others).
  struct AtTp {
    int64_t tp = 2;
    MeasuredTimes times;
  };
  std::vector<AtTp> measured_at_tp;
};

struct SearchNode {
  int64_t type = 0;     // index into SearchCluster::types
  int64_t devices = 1;
};

struct SearchCluster {
  std::vector<SearchDeviceType> types;
  std::vector<SearchNode> nodes;         // in the job's node order; devices are numbered in it
  std::vector<std::vector<Link>> links;  // [a][b]: between devices of nodes a and b; [a][a]: within node a
};

struct SearchJob {
  ModelFacts facts;
  int64_t micro_batch = 1;               // sequences per micro-batch
  int64_t seq_len = 1;
  int64_t micro_batches = 1;             // the global batch in micro-batches: what the batch shares split
  std::vector<int64_t> tp_divides;       // every stage's tp divides each of these (heads, ...)
  std::vector<int64_t> end_tp_divides;   // and the first and last stage's tp these too (the vocabulary)
  std::vector<pipeline::ScheduleKind> schedules = {pipeline::ScheduleKind::one_f_one_b,
                                                   pipeline::ScheduleKind::gpipe};
};

struct SearchOptions {
  int64_t top = 1;              // layouts to return
  int64_t exact_devices = 8;    // clusters of at most this many devices are searched whole,
  int64_t exact_micro_batches = 64;  // when the batch has at most this many micro-batches
};

// Devices are positions in node order (node 0's devices first).
struct SearchedStage {
  int64_t first_device = 0;
  int64_t devices = 1;  // its tp
  int64_t first_layer = 0;
  int64_t last_layer = 0;
};

struct SearchedReplica {
  int64_t micro_batches = 1;  // its batch share, in micro-batches
  std::vector<SearchedStage> stages;
};

struct SearchedLayout {
  pipeline::ScheduleKind schedule = pipeline::ScheduleKind::one_f_one_b;
  std::vector<SearchedReplica> replicas;
  std::vector<ReplicaCost> costs;  // what predict_layout priced
  LayoutPrediction prediction;
  bool fits = true;                // every device within its memory
};

struct SearchResult {
  std::vector<SearchedLayout> best;        // best first: fitting ones, by step time (ties: search order)
  std::optional<SearchedLayout> uniform;   // the best layout the dp/tp/pp shorthand can write
  bool exact = false;                      // the whole space was searched
  int64_t layouts_priced = 0;              // complete layouts whose shares were allocated
};

// Prices one layout of the cluster the way the search does (estimate_stage, predict_layout).
SearchedLayout price_layout(const SearchCluster& cluster, const SearchJob& job, pipeline::ScheduleKind schedule,
                            std::vector<SearchedReplica> replicas);

// Throws hetu::UsageError on an empty or inconsistent cluster, or when no layout exists.
SearchResult search_layouts(const SearchCluster& cluster, const SearchJob& job, const SearchOptions& options = {});

}  // namespace hetu::plan
