// The layout search. See Note [Layout search].
#include "lib/plan/layout_search.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>

#include "lib/plan/replica_search.h"
#include "lib/util/error.h"

namespace hetu::plan {

// Note [Layout search]: the space is the one `hetu plan --exhaustive` lists (lib/plan/planned_layouts.h):
// the cluster's devices in node order cut into consecutive replicas, each replica's devices into
// consecutive stages (a stage's device count is its tp, a degree the model allows), each
// replica's layers into consecutive ranges, the global batch into whole micro-batches per
// replica, one schedule for all; every device is used. A layout's step is the slowest replica's
// pipeline P, plus the slowest gradient sync S, plus the slowest optimizer step O
// (cost_model.h). Three facts make it searchable without listing it:
//  - Shares are not searched: for fixed replicas, the allocation of Note [Share allocation]
//    (replica_search.cpp) gives the shortest P exactly, and S and O do not depend on shares.
//  - Bounds: a partial layout (the replicas of the devices before some position) is cut when a
//    lower bound on any completion reaches the k-th best step found: P >= each chosen replica's
//    pipeline with one micro-batch, and P >= B / (sum over chosen replicas of 1 / beat_r +
//    devices left / W), where B is the batch in micro-batches, beat_r a replica's slowest stage
//    (forward + backward: its pipeline of m micro-batches takes at least m beats) and W a lower
//    bound on one micro-batch of the whole model on one device (each piece at its fastest type);
//    O >= theirs. S is left out of the bound: where the remaining replicas sit decides it
//    (replicas sharing a node sum there first, layout_sync_s), so it is priced on complete layouts.
//  - Symmetry: devices of one type on one node are interchangeable, and so are consecutive nodes
//    of one type and count with the same links (a run); a replica is priced once per place and
//    its pipeline time once per micro-batch count.
// Clusters of at most SearchOptions::exact_devices devices (and a batch of at most
// exact_micro_batches) are searched whole: every replica cut, stage cut and layer split, depth
// first, with the bounds above (exact: the result is the best layout of the space;
// test_layout_search checks it against the exhaustive list). Larger ones are searched over
// counts per run, a heuristic: every replica lies inside one run and all replicas of a run are
// alike, either 1/k of a node or q whole nodes (k divides its devices, q its nodes), with one
// tp for all its stages (stages inside a node); each such replica gets its best layer split at
// its proportional share of the batch (Note [Best layer split]; at most 16 splits timed past
// the DP's), its pipeline is timed exactly up to 4 x stages + 4 micro-batches and extrapolated
// past that by whole windows of 2 x stages (the steady state repeats); per run the 6 shapes
// with the shortest step on their proportional share are kept, and the runs' choices are
// searched with the bounds above. So is one pipeline over the whole cluster (one tp on every
// node, stages inside nodes), the only place mixed types share a replica there; when that space
// is empty (more runs than micro-batches), the best uniform layout stands in. What is returned
// is priced exactly (price_layout). Ties keep the first found: schedules in SearchJob
// order, then replica cuts (shorter first), stage cuts (smaller first stage first) and layer
// splits (fewer layers first).

namespace {

constexpr int64_t kShapesPerRun = 6;
constexpr int64_t kSplitsPerShape = 16;  // layer splits timed per replica shape, past the DP's

// The search by runs times pipelines exactly up to this many micro-batches per stage, then
// extrapolates (ReplicaCandidate::exact_up_to).
int64_t exact_micro_batches(int64_t stages) { return 4 * stages + 4; }

// The best layouts found so far, by step (ties: the first found first).
class TopLayouts {
 public:
  struct Entry {
    double step_s = 0;
    pipeline::ScheduleKind schedule{};
    std::vector<ReplicaCandidate> replicas;
    std::vector<int64_t> shares;
  };
  explicit TopLayouts(int64_t keep) : keep_(static_cast<size_t>(std::max<int64_t>(1, keep))) {}
  // Steps at or above this cannot enter.
  double bar() const { return entries_.size() < keep_ ? kNoFit : entries_.back().step_s; }
  void offer(Entry e) {
    if (!(e.step_s < bar())) return;
    auto at = std::upper_bound(entries_.begin(), entries_.end(), e.step_s,
                               [](double s, const Entry& x) { return s < x.step_s; });
    entries_.insert(at, std::move(e));
    if (entries_.size() > keep_) entries_.pop_back();
  }
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  size_t keep_;
  std::vector<Entry> entries_;
};

// Search state shared by both regimes: the partial layout's replicas and its bound.
struct Search {
  const ClusterIndex& index;
  const SearchJob& job;
  TopLayouts& top;
  pipeline::ScheduleKind schedule;
  double model_work_s;  // W of the Note
  int64_t priced = 0;

  // A lower bound on every completion of `chosen` that still has `devices_left` devices to place
  // in at least `replicas_left` more replicas.
  double bound(const std::vector<ReplicaCandidate*>& chosen, int64_t devices_left, int64_t replicas_left) const {
    const int64_t replicas = static_cast<int64_t>(chosen.size()) + replicas_left;
    if (replicas > job.micro_batches) return kNoFit;
    // The sync is left out: where the remaining replicas sit decides it (replicas sharing a
    // node sum there first, layout_sync_s), so no partial layout bounds it from below.
    double pipe = 0, optimizer = 0, rate = static_cast<double>(devices_left) / model_work_s;
    for (ReplicaCandidate* r : chosen) {
      pipe = std::max(pipe, r->pipeline_s(1));
      optimizer = std::max(optimizer, r->optimizer_s());
      rate += 1 / r->bottleneck_s;
    }
    pipe = std::max(pipe, static_cast<double>(job.micro_batches) / rate);
    return pipe + optimizer;
  }

  // Prices a complete layout and offers it.
  void complete(const std::vector<ReplicaCandidate*>& replicas) {
    const int64_t n = static_cast<int64_t>(replicas.size());
    if (n > job.micro_batches) return;
    ++priced;
    std::vector<int64_t> shares;
    const double pipe = allocate_shares(replicas, job.micro_batches, shares);
    if (pipe == kNoFit) return;
    const double sync = layout_sync_s(index, job, replicas);
    double optimizer = 0;
    for (ReplicaCandidate* r : replicas) optimizer = std::max(optimizer, r->optimizer_s());
    const double step = pipe + sync + optimizer;
    if (!(step < top.bar())) return;
    TopLayouts::Entry e{step, schedule, {}, shares};
    for (ReplicaCandidate* r : replicas) e.replicas.push_back(*r);
    top.offer(std::move(e));
  }
};

// Every way to write n as an ordered sum of parts that `ok` accepts (ok(part, is_first, is_last)).
void compositions(int64_t n, int64_t max_parts, const std::function<bool(int64_t, bool, bool)>& ok,
                  const std::function<void(const std::vector<int64_t>&)>& fn) {
  std::vector<int64_t> parts;
  std::function<void(int64_t)> go = [&](int64_t left) {
    if (left == 0) {
      if (!parts.empty() && ok(parts.back(), parts.size() == 1, true)) fn(parts);
      return;
    }
    if (static_cast<int64_t>(parts.size()) >= max_parts) return;
    for (int64_t k = 1; k <= left; ++k) {
      // A part that is not the last must pass as a middle (or first) one; the last is checked at the end.
      if (k < left && !ok(k, parts.empty(), false)) continue;
      parts.push_back(k);
      go(left - k);
      parts.pop_back();
    }
  };
  go(n);
}

// The whole space, depth first over replica cuts, stage cuts and layer splits.
void search_exact(Search& search) {
  const ClusterIndex& index = search.index;
  const SearchJob& job = search.job;
  const int64_t n = index.devices(), layers = job.facts.layers;
  // One candidate per (first device, stage sizes, layer split): their pipeline times are reused.
  std::map<std::vector<int64_t>, ReplicaCandidate> made;
  auto tp_ok = [&](int64_t tp, bool first, bool last) { return tp_allowed(job, tp, first || last); };
  std::vector<ReplicaCandidate*> chosen;
  std::function<void(int64_t)> go = [&](int64_t at) {
    if (at == n) {
      search.complete(chosen);
      return;
    }
    for (int64_t size = 1; at + size <= n; ++size) {
      compositions(size, layers, tp_ok, [&](const std::vector<int64_t>& tps) {
        const int64_t stages = static_cast<int64_t>(tps.size());
        compositions(layers, stages, [](int64_t, bool, bool) { return true; }, [&](const std::vector<int64_t>& split) {
          if (static_cast<int64_t>(split.size()) != stages) return;
          std::vector<int64_t> key{at};
          key.insert(key.end(), tps.begin(), tps.end());
          key.insert(key.end(), split.begin(), split.end());
          auto it = made.find(key);
          if (it == made.end()) {
            std::vector<StagePlace> places;
            for (int64_t s = 0, device = at; s < stages; device += tps[static_cast<size_t>(s)], ++s)
              places.push_back(index.place(device, tps[static_cast<size_t>(s)]));
            it = made.emplace(key, make_replica(index, job, search.schedule, std::move(places), split)).first;
          }
          ReplicaCandidate* r = &it->second;
          if (r->pipeline_s(1) == kNoFit) return;
          chosen.push_back(r);
          if (search.bound(chosen, n - at - size, at + size < n ? 1 : 0) < search.top.bar()) go(at + size);
          chosen.pop_back();
        });
      });
    }
  };
  go(0);
}

// Consecutive nodes that are interchangeable: same type, device count and links.
std::vector<std::pair<int64_t, int64_t>> runs_of_nodes(const SearchCluster& cluster) {
  auto same = [](const Link& a, const Link& b) { return a.bytes_per_s == b.bytes_per_s && a.latency_s == b.latency_s; };
  auto alike = [&](size_t a, size_t b) {
    if (cluster.nodes[a].type != cluster.nodes[b].type || cluster.nodes[a].devices != cluster.nodes[b].devices) return false;
    if (!same(cluster.links[a][a], cluster.links[b][b])) return false;
    for (size_t x = 0; x < cluster.nodes.size(); ++x)
      if (x != a && x != b && !same(cluster.links[a][x], cluster.links[b][x])) return false;
    return true;
  };
  std::vector<std::pair<int64_t, int64_t>> runs;  // (first node, nodes)
  for (size_t a = 0; a < cluster.nodes.size(); ++a) {
    if (!runs.empty() && alike(static_cast<size_t>(runs.back().first), a)) {
      ++runs.back().second;
    } else {
      runs.push_back({static_cast<int64_t>(a), 1});
    }
  }
  return runs;
}

struct RunShape {
  ReplicaCandidate replica;
  int64_t copies = 1;
  double standalone_s = 0;  // the step of the run alone on its proportional share
};

// A run's replica shapes: 1/k of a node or q whole nodes, one tp, best split; the best few.
std::vector<RunShape> run_shapes(Search& search, int64_t first_node, int64_t nodes) {
  const ClusterIndex& index = search.index;
  const SearchJob& job = search.job;
  const int64_t per_node = index.cluster().nodes[static_cast<size_t>(first_node)].devices;
  const int64_t run_devices = per_node * nodes, n = index.devices();
  std::vector<int64_t> sizes;
  for (int64_t d = 1; d <= per_node; ++d)
    if (per_node % d == 0) sizes.push_back(d);
  for (int64_t q = 2; q <= nodes; ++q)
    if (nodes % q == 0) sizes.push_back(q * per_node);
  std::vector<RunShape> shapes;
  const int64_t start = index.first_device(first_node);
  for (int64_t size : sizes) {
    const int64_t copies = run_devices / size;
    const int64_t share = std::max<int64_t>(1, (job.micro_batches * size + n - 1) / n);
    for (int64_t tp = 1; tp <= std::min(size, per_node); ++tp) {
      if (std::min(size, per_node) % tp != 0 || !tp_allowed(job, tp, true)) continue;
      const int64_t stages = size / tp;
      if (stages > job.facts.layers) continue;
      std::vector<StagePlace> places;
      for (int64_t s = 0; s < stages; ++s) places.push_back(index.place(start + s * tp, tp));
      std::optional<ReplicaCandidate> r = best_layer_split(index, job, search.schedule, places, share, kSplitsPerShape,
                                                           exact_micro_batches(stages));
      if (!r) continue;
      const int64_t run_share = std::max(copies, job.micro_batches * run_devices / n);
      const int64_t each = (run_share + copies - 1) / copies;
      const double pipe = r->pipeline_s(std::max<int64_t>(1, each));
      const double standalone = pipe + r->sync_s(index, job, copies) + r->optimizer_s();
      shapes.push_back({std::move(*r), copies, standalone});
    }
  }
  std::stable_sort(shapes.begin(), shapes.end(),
                   [](const RunShape& a, const RunShape& b) { return a.standalone_s < b.standalone_s; });
  if (static_cast<int64_t>(shapes.size()) > kShapesPerRun) shapes.resize(static_cast<size_t>(kShapesPerRun));
  return shapes;
}

// One pipeline over the whole cluster, the same tp on every node (stages inside nodes).
void search_one_pipeline(Search& search) {
  const ClusterIndex& index = search.index;
  int64_t common = 0;
  for (const SearchNode& node : index.cluster().nodes) common = std::gcd(common, node.devices);
  for (int64_t tp = 1; tp <= common; ++tp) {
    if (common % tp != 0 || !tp_allowed(search.job, tp, true) || index.devices() / tp > search.job.facts.layers) continue;
    std::vector<StagePlace> places;
    for (int64_t d = 0; d < index.devices(); d += tp) places.push_back(index.place(d, tp));
    const int64_t stages = static_cast<int64_t>(places.size());
    std::optional<ReplicaCandidate> r = best_layer_split(index, search.job, search.schedule, places,
                                                         search.job.micro_batches, kSplitsPerShape,
                                                         exact_micro_batches(stages));
    if (r) search.complete({&*r});
  }
}

// Counts per run: one replica shape per run, the runs' choices searched with the bounds.
void search_by_runs(Search& search) {
  search_one_pipeline(search);
  const SearchCluster& cluster = search.index.cluster();
  const std::vector<std::pair<int64_t, int64_t>> runs = runs_of_nodes(cluster);
  std::vector<std::vector<RunShape>> shapes;
  std::vector<int64_t> devices_from(runs.size() + 1, 0);
  for (size_t g = 0; g < runs.size(); ++g) shapes.push_back(run_shapes(search, runs[g].first, runs[g].second));
  for (size_t g = runs.size(); g-- > 0;)
    devices_from[g] = devices_from[g + 1] + runs[g].second * cluster.nodes[static_cast<size_t>(runs[g].first)].devices;
  std::vector<ReplicaCandidate*> chosen;
  std::function<void(size_t)> go = [&](size_t g) {
    if (g == runs.size()) {
      search.complete(chosen);
      return;
    }
    for (RunShape& shape : shapes[g]) {
      for (int64_t c = 0; c < shape.copies; ++c) chosen.push_back(&shape.replica);
      const int64_t runs_left = static_cast<int64_t>(runs.size() - g - 1);
      if (search.bound(chosen, devices_from[g + 1], runs_left) < search.top.bar()) go(g + 1);
      chosen.resize(chosen.size() - static_cast<size_t>(shape.copies));
    }
  };
  go(0);
}

// The layouts the dp/tp/pp shorthand writes: dp equal replicas of pp stages of tp devices,
// layers split evenly (the extra ones to the first stages), equal shares.
std::optional<SearchedLayout> best_uniform(const SearchCluster& cluster, const SearchJob& job, int64_t devices) {
  std::optional<SearchedLayout> best;
  const int64_t layers = job.facts.layers;
  for (pipeline::ScheduleKind schedule : job.schedules) {
    for (int64_t dp = 1; dp <= devices; ++dp) {
      if (devices % dp != 0 || job.micro_batches % dp != 0) continue;
      for (int64_t tp = 1; tp <= devices / dp; ++tp) {
        if ((devices / dp) % tp != 0 || !tp_allowed(job, tp, true)) continue;
        const int64_t pp = devices / dp / tp;
        if (pp > layers) continue;
        std::vector<SearchedReplica> replicas;
        for (int64_t r = 0; r < dp; ++r) {
          SearchedReplica replica{job.micro_batches / dp, {}};
          for (int64_t s = 0, layer = 0; s < pp; ++s) {
            const int64_t count = layers / pp + (s < layers % pp ? 1 : 0);
            replica.stages.push_back({(r * pp + s) * tp, tp, layer, layer + count - 1});
            layer += count;
          }
          replicas.push_back(std::move(replica));
        }
        SearchedLayout l = price_layout(cluster, job, schedule, std::move(replicas));
        if (!best || (l.fits && !best->fits) ||
            (l.fits == best->fits && l.prediction.step_s < best->prediction.step_s)) {
          best = std::move(l);
        }
      }
    }
  }
  return best;
}

}  // namespace

SearchedLayout price_layout(const SearchCluster& cluster, const SearchJob& job, pipeline::ScheduleKind schedule,
                            std::vector<SearchedReplica> replicas) {
  const ClusterIndex index(cluster);
  SearchedLayout out;
  out.schedule = schedule;
  const int64_t n = static_cast<int64_t>(replicas.size());
  std::vector<std::vector<StagePlace>> places(replicas.size());
  std::vector<HeldLayers> held;
  for (size_t r = 0; r < replicas.size(); ++r) {
    for (const SearchedStage& stage : replicas[r].stages) {
      HT_USAGE_CHECK(stage.devices >= 1 && stage.first_device >= 0 && stage.first_device + stage.devices <= index.devices(),
                     "layout search: devices {}-{} of a {}-device cluster", stage.first_device,
                     stage.first_device + stage.devices - 1, index.devices());
      places[r].push_back(index.place(stage.first_device, stage.devices));
    }
  }
  for (size_t r = 0; r < replicas.size(); ++r)
    for (size_t s = 0; s < places[r].size(); ++s)
      held.push_back({&places[r][s], replicas[r].stages[s].first_layer, replicas[r].stages[s].last_layer});
  for (size_t r = 0; r < replicas.size(); ++r) {
    ReplicaCost cost{schedule, replicas[r].micro_batches, {}};
    const std::vector<StagePlace>& p = places[r];
    for (size_t s = 0; s < p.size(); ++s) {
      const Link next = s + 1 < p.size() ? index.between(p[s], p[s + 1]) : Link{};
      const SearchedStage& stage = replicas[r].stages[s];
      const SyncLinks sync = sync_links(index, held, p[s], stage.first_layer);
      cost.stages.push_back(stage_cost(index, job, p[s], next, s + 1 < p.size() ? &p[s + 1] : nullptr, stage.first_layer,
                                       stage.last_layer - stage.first_layer + 1, s == 0, s + 1 == p.size(), n, &sync));
    }
    out.costs.push_back(std::move(cost));
  }
  out.prediction = predict_layout(out.costs);
  for (size_t r = 0; r < replicas.size(); ++r)
    for (size_t s = 0; s < replicas[r].stages.size(); ++s) {
      const SearchedStage& stage = replicas[r].stages[s];
      const double memory = index.memory_bytes(index.place(stage.first_device, stage.devices));
      if (memory > 0 && out.prediction.peak_bytes[r][s] > memory) out.fits = false;
    }
  out.replicas = std::move(replicas);
  return out;
}

SearchResult search_layouts(const SearchCluster& cluster, const SearchJob& job, const SearchOptions& options) {
  const ClusterIndex index(cluster);
  HT_USAGE_CHECK(job.facts.layers >= 1 && job.micro_batches >= 1 && job.micro_batch >= 1 && job.seq_len >= 1,
                 "layout search: {} layers, {} micro-batches of {} x {} tokens", job.facts.layers, job.micro_batches,
                 job.micro_batch, job.seq_len);
  HT_USAGE_CHECK(!job.schedules.empty(), "layout search: no schedules to search");
  SearchResult result;
  result.exact = index.devices() <= options.exact_devices && job.micro_batches <= options.exact_micro_batches;
  auto run = [&](const SearchCluster& searched) {
    const ClusterIndex in(searched);
    TopLayouts top(options.top);
    const double work = model_work_lower_bound_s(in, job);
    for (pipeline::ScheduleKind schedule : job.schedules) {
      Search search{in, job, top, schedule, work};
      result.exact ? search_exact(search) : search_by_runs(search);
      result.layouts_priced += search.priced;
    }
    return top.entries();
  };
  std::vector<TopLayouts::Entry> found = run(cluster);
  if (found.empty()) {  // nothing fits: the best layouts ignoring memory, flagged
    SearchCluster unbounded = cluster;
    for (SearchDeviceType& type : unbounded.types) type.memory_bytes = 0;
    found = run(unbounded);
  }
  result.uniform = best_uniform(cluster, job, index.devices());
  HT_USAGE_CHECK(!found.empty() || result.uniform, "layout search: no layout of {} devices for a {}-layer model and {} "
                 "micro-batches", index.devices(), job.facts.layers, job.micro_batches);
  for (const TopLayouts::Entry& e : found) {
    // Replicas follow each other in device order; copies of a run's shape move along it.
    std::vector<SearchedReplica> replicas;
    int64_t device = 0;
    for (size_t r = 0; r < e.replicas.size(); ++r) {
      const ReplicaCandidate& c = e.replicas[r];
      SearchedReplica replica{e.shares[r], {}};
      int64_t layer = 0;
      for (size_t s = 0; s < c.places.size(); ++s) {
        replica.stages.push_back({device, c.places[s].devices, layer, layer + c.layers[s] - 1});
        device += c.places[s].devices;
        layer += c.layers[s];
      }
      replicas.push_back(std::move(replica));
    }
    result.best.push_back(price_layout(cluster, job, e.schedule, std::move(replicas)));
  }
  if (result.best.empty()) result.best.push_back(*result.uniform);  // the runs' space can be empty (more runs than micro-batches)
  std::stable_sort(result.best.begin(), result.best.end(), [](const SearchedLayout& a, const SearchedLayout& b) {
    if (a.fits != b.fits) return a.fits;
    return a.prediction.step_s < b.prediction.step_s;
  });
  return result;
}

}  // namespace hetu::plan
