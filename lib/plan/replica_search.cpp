// Stage places, one replica's best layer split and the share allocation. See Note [Best layer
// split] and Note [Share allocation].
#include "lib/plan/replica_search.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <queue>

#include "lib/util/error.h"

namespace hetu::plan {

Link slower(const Link& a, const Link& b) { return b.transfer_s(1e6) > a.transfer_s(1e6) ? b : a; }

ClusterIndex::ClusterIndex(const SearchCluster& cluster) : cluster_(cluster) {
  const size_t nodes = cluster.nodes.size();
  HT_USAGE_CHECK(nodes >= 1, "layout search: the cluster has no nodes");
  HT_USAGE_CHECK(cluster.links.size() == nodes, "layout search: {} rows of links for {} nodes", cluster.links.size(), nodes);
  for (size_t a = 0; a < nodes; ++a) {
    const SearchNode& node = cluster.nodes[a];
    HT_USAGE_CHECK(node.devices >= 1, "layout search: node {} has {} devices", a, node.devices);
    HT_USAGE_CHECK(node.type >= 0 && node.type < static_cast<int64_t>(cluster.types.size()),
                   "layout search: node {} has device type {} of {}", a, node.type, cluster.types.size());
    HT_USAGE_CHECK(cluster.links[a].size() == nodes, "layout search: node {} has {} links for {} nodes", a,
                   cluster.links[a].size(), nodes);
    first_device_.push_back(static_cast<int64_t>(node_of_.size()));
    for (int64_t i = 0; i < node.devices; ++i) node_of_.push_back(static_cast<int64_t>(a));
    Link worst = cluster.links[a][0];
    for (const Link& l : cluster.links[a]) worst = slower(worst, l);
    slowest_from_node_.push_back(worst);
  }
}

StagePlace ClusterIndex::place(int64_t first_device, int64_t devices) const {
  StagePlace p;
  p.first_device = first_device;
  p.devices = devices;
  p.first_node = node_of(first_device);
  p.last_node = node_of(first_device + devices - 1);
  p.type = cluster_.nodes[static_cast<size_t>(p.first_node)].type;
  p.tp = cluster_.links[static_cast<size_t>(p.first_node)][static_cast<size_t>(p.first_node)];
  p.everyone = slowest_from_node_[static_cast<size_t>(p.first_node)];
  for (int64_t a = p.first_node; a <= p.last_node; ++a) {
    for (int64_t b = p.first_node; b <= p.last_node; ++b)
      p.tp = slower(p.tp, cluster_.links[static_cast<size_t>(a)][static_cast<size_t>(b)]);
    p.everyone = slower(p.everyone, slowest_from_node_[static_cast<size_t>(a)]);
  }
  return p;
}

Link ClusterIndex::between(const StagePlace& a, const StagePlace& b) const {
  Link worst = cluster_.links[static_cast<size_t>(a.first_node)][static_cast<size_t>(b.first_node)];
  for (int64_t x = a.first_node; x <= a.last_node; ++x)
    for (int64_t y = b.first_node; y <= b.last_node; ++y)
      worst = slower(worst, cluster_.links[static_cast<size_t>(x)][static_cast<size_t>(y)]);
  return worst;
}

double ClusterIndex::memory_bytes(const StagePlace& place) const {
  double least = 0;
  for (int64_t a = place.first_node; a <= place.last_node; ++a) {
    const double m = cluster_.types[static_cast<size_t>(cluster_.nodes[static_cast<size_t>(a)].type)].memory_bytes;
    if (m > 0 && (least == 0 || m < least)) least = m;
  }
  return least;
}

StageCost stage_cost(const ClusterIndex& index, const SearchJob& job, const StagePlace& place, const Link& next,
                     const StagePlace* next_place, int64_t first_layer, int64_t layers, bool first, bool last,
                     int64_t replicas, const SyncLinks* sync) {
  const StageShape shape{first_layer, first_layer + layers - 1, first, last, place.devices, job.micro_batch,
                         job.seq_len, replicas};
  auto cost_as = [&](int64_t type_index) {
    const SearchDeviceType& type = index.cluster().types[static_cast<size_t>(type_index)];
    DeviceRates rates = type.rates;
    for (const SearchDeviceType::AtTp& at : type.measured_at_tp)
      if (at.tp == place.devices) rates.measured = at.times;
    rates.tp = place.tp;
    rates.next_stage = last ? Link{} : next;
    if (!last && next_place != nullptr) {
      rates.next_stage_tp = next_place->devices;
      rates.next_stage_gather = next_place->tp;
      rates.next_stage_gather.shared_by = 1;
    }
    rates.replicas = rates.tied = place.everyone;
    if (sync != nullptr) {
      rates.replicas = sync->between;
      rates.replicas_per_node = sync->per_node;
      rates.replicas_within = sync->within;
    }
    return estimate_stage(job.facts, shape, rates);
  };
  // A stage over several nodes (a tp group across them) runs at its slowest type's pace.
  StageCost slowest = cost_as(place.type);
  for (int64_t a = place.first_node + 1; a <= place.last_node; ++a) {
    const int64_t type = index.cluster().nodes[static_cast<size_t>(a)].type;
    if (type == place.type) continue;
    StageCost c = cost_as(type);
    if (c.times.forward_s + c.times.backward_s > slowest.times.forward_s + slowest.times.backward_s) slowest = c;
  }
  return slowest;
}

bool tp_allowed(const SearchJob& job, int64_t tp, bool holds_an_end) {
  for (int64_t v : job.tp_divides)
    if (v % tp != 0) return false;
  if (holds_an_end)
    for (int64_t v : job.end_tp_divides)
      if (v % tp != 0) return false;
  return true;
}

ReplicaCandidate make_replica(const ClusterIndex& index, const SearchJob& job, pipeline::ScheduleKind schedule,
                              std::vector<StagePlace> places, std::vector<int64_t> layers) {
  ReplicaCandidate r;
  r.schedule = schedule;
  const size_t n = places.size();
  int64_t layer = 0;
  for (size_t s = 0; s < n; ++s) {
    r.next.push_back(s + 1 < n ? index.between(places[s], places[s + 1]) : Link{});
    r.costs.push_back(stage_cost(index, job, places[s], r.next[s], s + 1 < n ? &places[s + 1] : nullptr, layer, layers[s], s == 0, s + 1 == n, 1));
    r.memory_bytes.push_back(index.memory_bytes(places[s]));
    layer += layers[s];
    r.bottleneck_s = std::max(r.bottleneck_s, r.costs[s].times.forward_s + r.costs[s].times.backward_s);
  }
  r.places = std::move(places);
  r.layers = std::move(layers);
  return r;
}

double ReplicaCandidate::pipeline_s(int64_t micro_batches) {
  const size_t m = static_cast<size_t>(micro_batches);
  if (pipeline_by_m.size() <= m) pipeline_by_m.resize(m + 1, std::nan(""));
  if (!std::isnan(pipeline_by_m[m])) return pipeline_by_m[m];
  double t = 0;
  const int64_t exact = std::max<int64_t>(2, exact_up_to);
  if (micro_batches <= exact) {
    const LayoutPrediction p = predict_layout({{schedule, micro_batches, costs}});
    t = p.pipeline_s;
    for (size_t s = 0; s < costs.size(); ++s)
      if (memory_bytes[s] > 0 && p.peak_bytes[0][s] > memory_bytes[s]) t = kNoFit;
  } else {
    const int64_t stages = static_cast<int64_t>(costs.size());
    for (int64_t s = 0; s < stages; ++s) {
      const double memory = memory_bytes[static_cast<size_t>(s)];
      const int64_t held = micro_batches_in_flight(schedule, stages, micro_batches, s);
      if (memory > 0 && peak_bytes(costs[static_cast<size_t>(s)], held, micro_batches) > memory) t = kNoFit;
    }
    if (t == 0) {
      // The steady state repeats with a period (1F1B alternates, e.g. 2) that divides the window
      // w = 2 x stages in the usual cases: step from the exact time of the same phase.
      const int64_t w = std::min(2 * stages, exact - 1), phase = (micro_batches - exact) % w;
      const int64_t base = phase == 0 ? exact : exact - w + phase;
      const double per_window = pipeline_s(exact) - pipeline_s(exact - w);
      t = pipeline_s(base) + static_cast<double>((micro_batches - base) / w) * per_window;
    }
  }
  pipeline_by_m[m] = t;
  return t;
}

double ReplicaCandidate::sync_s(const ClusterIndex& index, const SearchJob& job, int64_t replicas) const {
  double most = 0;
  int64_t layer = 0;
  for (size_t s = 0; s < places.size(); ++s) {
    const StageCost c = stage_cost(index, job, places[s], next[s], s + 1 < places.size() ? &places[s + 1] : nullptr, layer,
                                   layers[s], s == 0, s + 1 == places.size(),
                                   replicas);
    most = std::max(most, c.grad_sync_s);
    layer += layers[s];
  }
  return most;
}

SyncLinks sync_links(const ClusterIndex& index, const std::vector<HeldLayers>& stages, const StagePlace& own,
                     int64_t layer) {
  const std::vector<std::vector<Link>>& links = index.cluster().links;
  std::vector<const StagePlace*> holders;
  for (const HeldLayers& h : stages)
    if (h.first_layer <= layer && layer <= h.last_layer) holders.push_back(h.place);
  std::optional<Link> within, between;  // the slowest seen
  auto keep_slower = [](std::optional<Link>& worst, const Link& l) { worst = worst ? slower(*worst, l) : l; };
  SyncLinks out;
  for (int64_t k = 0; k < static_cast<int64_t>(links.size()); ++k) {
    const int64_t sharing = std::count_if(holders.begin(), holders.end(),
                                          [&](const StagePlace* p) { return p->first_node <= k && k <= p->last_node; });
    if (sharing == 0) continue;
    out.per_node = std::max(out.per_node, sharing);
    const size_t kk = static_cast<size_t>(k);
    if (sharing > 1) keep_slower(within, links[kk][kk]);
    for (int64_t a = own.first_node; a <= own.last_node; ++a)
      if (a != k) keep_slower(between, links[static_cast<size_t>(a)][kk]);
  }
  out.within = within.value_or(Link{});
  out.between = between.value_or(Link{});
  return out;
}

double layout_sync_s(const ClusterIndex& index, const SearchJob& job, const std::vector<ReplicaCandidate*>& replicas) {
  std::vector<HeldLayers> stages;
  for (const ReplicaCandidate* r : replicas) {
    int64_t layer = 0;
    for (size_t s = 0; s < r->places.size(); layer += r->layers[s], ++s)
      stages.push_back({&r->places[s], layer, layer + r->layers[s] - 1});
  }
  const int64_t n = static_cast<int64_t>(replicas.size());
  double most = 0;
  for (const ReplicaCandidate* r : replicas) {
    int64_t layer = 0;
    for (size_t s = 0; s < r->places.size(); layer += r->layers[s], ++s) {
      const SyncLinks sync = sync_links(index, stages, r->places[s], layer);
      const StageCost c = stage_cost(index, job, r->places[s], r->next[s], s + 1 < r->places.size() ? &r->places[s + 1] : nullptr,
                                     layer, r->layers[s], s == 0, s + 1 == r->places.size(), n, &sync);
      most = std::max(most, c.grad_sync_s);
    }
  }
  return most;
}

double ReplicaCandidate::optimizer_s() const {
  double most = 0;
  for (const StageCost& c : costs) most = std::max(most, c.optimizer_s);
  return most;
}

// Note [Best layer split]: over given stages, the split of the model's layers into one
// consecutive range per stage whose pipeline (pipeline_time.h) is shortest at m micro-batches
// among those whose stages fit their memory. A stage's cost grows with its layer count, so:
//  1. the split minimizing the slowest stage's forward + backward (the pipeline's steady-state
//     beat) is found exactly by dynamic programming over (stage, layers used so far):
//     best[s][l] = min over k of max(best[s-1][l-k], stage s's time with k layers); it is timed
//     exactly and is the first incumbent;
//  2. a depth-first search over each stage's layer count (fewest first) then times every split
//     exactly unless it is pruned: stage s cannot start before micro-batch 0 has passed the
//     stages before it, runs m forwards and m backwards one at a time, and its last backward's
//     gradient must still pass back through the stages before it, so any schedule takes at
//     least  sum_{t<s}(F_t + send_t) + m (F_s + B_s) + sum_{t<s}(B_t + send_t); a partial split
//     whose largest such bound reaches the incumbent is cut (and so are its larger counts, as
//     the bound grows with them), as is a stage past its memory.
// Ties keep the first found (the DP split, then depth-first order).
std::optional<ReplicaCandidate> best_layer_split(const ClusterIndex& index, const SearchJob& job,
                                                 pipeline::ScheduleKind schedule, const std::vector<StagePlace>& places,
                                                 int64_t micro_batches, int64_t max_leaves, int64_t exact_up_to) {
  const int64_t stages = static_cast<int64_t>(places.size()), layers = job.facts.layers;
  if (stages < 1 || stages > layers) return std::nullopt;
  const double m = static_cast<double>(micro_batches);
  std::vector<Link> next;
  std::vector<int64_t> in_flight;
  for (int64_t s = 0; s < stages; ++s) {
    const size_t si = static_cast<size_t>(s);
    next.push_back(s + 1 < stages ? index.between(places[si], places[si + 1]) : Link{});
    in_flight.push_back(micro_batches_in_flight(schedule, stages, micro_batches, s));
  }
  // cost[s][k]: stage s with k layers (where it starts changes nothing but the range).
  std::vector<std::vector<StageCost>> cost(static_cast<size_t>(stages));
  std::vector<std::vector<bool>> fits(static_cast<size_t>(stages));
  for (int64_t s = 0; s < stages; ++s) {
    const size_t si = static_cast<size_t>(s);
    const double memory = index.memory_bytes(places[si]);
    cost[si].resize(static_cast<size_t>(layers + 1));
    fits[si].assign(static_cast<size_t>(layers + 1), false);
    for (int64_t k = 1; k <= layers - stages + 1; ++k) {
      cost[si][static_cast<size_t>(k)] = stage_cost(index, job, places[si], next[si],
                                                     s + 1 < stages ? &places[si + 1] : nullptr, 0, k, s == 0, s + 1 == stages, 1);
      fits[si][static_cast<size_t>(k)] =
          memory <= 0 || peak_bytes(cost[si][static_cast<size_t>(k)], in_flight[si], micro_batches) <= memory;
    }
  }
  auto beat = [&](int64_t s, int64_t k) {
    const StageTimes& t = cost[static_cast<size_t>(s)][static_cast<size_t>(k)].times;
    return t.forward_s + t.backward_s;
  };

  // 1. The DP split minimizing the slowest stage.
  const double inf = kNoFit;
  std::vector<std::vector<double>> dp(static_cast<size_t>(stages + 1), std::vector<double>(static_cast<size_t>(layers + 1), inf));
  std::vector<std::vector<int64_t>> take(dp.size(), std::vector<int64_t>(static_cast<size_t>(layers + 1), 0));
  dp[0][0] = 0;
  for (int64_t s = 0; s < stages; ++s)
    for (int64_t used = s; used <= layers; ++used) {
      const double before = dp[static_cast<size_t>(s)][static_cast<size_t>(used)];
      if (before == inf) continue;
      for (int64_t k = 1; used + k <= layers - (stages - s - 1); ++k) {
        if (!fits[static_cast<size_t>(s)][static_cast<size_t>(k)]) break;
        const double v = std::max(before, beat(s, k));
        double& cell = dp[static_cast<size_t>(s + 1)][static_cast<size_t>(used + k)];
        if (v < cell) cell = v, take[static_cast<size_t>(s + 1)][static_cast<size_t>(used + k)] = k;
      }
    }
  if (dp[static_cast<size_t>(stages)][static_cast<size_t>(layers)] == inf) return std::nullopt;
  std::vector<int64_t> split(static_cast<size_t>(stages));
  for (int64_t s = stages, used = layers; s > 0; --s) {
    split[static_cast<size_t>(s - 1)] = take[static_cast<size_t>(s)][static_cast<size_t>(used)];
    used -= split[static_cast<size_t>(s - 1)];
  }
  std::optional<ReplicaCandidate> best = make_replica(index, job, schedule, places, split);
  best->exact_up_to = exact_up_to;
  double best_s = best->pipeline_s(micro_batches);
  if (best_s == inf) return std::nullopt;

  // 2. Branch and bound over the other splits.
  int64_t leaves = 0;
  std::vector<int64_t> current(static_cast<size_t>(stages));
  std::function<void(int64_t, int64_t, double, double, double)> go = [&](int64_t s, int64_t used, double before_f,
                                                                          double before_b, double bound) {
    if (leaves >= max_leaves) return;
    if (s == stages) {
      if (current == split) return;
      ++leaves;
      ReplicaCandidate r = make_replica(index, job, schedule, places, current);
      r.exact_up_to = exact_up_to;
      const double t = r.pipeline_s(micro_batches);
      if (t < best_s) best_s = t, best = std::move(r);
      return;
    }
    const size_t si = static_cast<size_t>(s);
    const int64_t most = layers - used - (stages - s - 1);
    for (int64_t k = s + 1 == stages ? most : 1; k <= most; ++k) {
      if (!fits[si][static_cast<size_t>(k)]) break;
      const StageTimes& t = cost[si][static_cast<size_t>(k)].times;
      const double b = std::max(bound, before_f + m * (t.forward_s + t.backward_s) + before_b);
      if (b >= best_s) break;
      current[si] = k;
      go(s + 1, used + k, before_f + t.forward_s + t.send_s, before_b + t.backward_s + t.send_s, b);
    }
  };
  go(0, 0, 0, 0, 0);
  return best;
}

// Note [Share allocation]: the micro-batches of a step go to the replicas so that the longest
// pipeline is shortest. Each replica's pipeline time is nondecreasing in its micro-batches
// (and infinite past its memory), so handing them out one at a time, each to the replica whose
// pipeline would then be shortest (the lower index among equals), is optimal: were the result
// T above the optimum T*, at the step that first passed T* every replica would already hold at
// least its share of the optimal allocation, and those already sum to the whole batch.
double allocate_shares(const std::vector<ReplicaCandidate*>& replicas, int64_t micro_batches,
                       std::vector<int64_t>& shares) {
  const int64_t n = static_cast<int64_t>(replicas.size());
  shares.assign(replicas.size(), 1);
  if (n < 1 || n > micro_batches) return kNoFit;
  if (n == 1) {
    shares[0] = micro_batches;
    return replicas[0]->pipeline_s(micro_batches);
  }
  using Entry = std::pair<double, int64_t>;  // (time with one more, replica)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> next;
  double longest = 0;
  for (int64_t r = 0; r < n; ++r) {
    const double t = replicas[static_cast<size_t>(r)]->pipeline_s(1);
    if (t == kNoFit) return kNoFit;
    longest = std::max(longest, t);
    if (n < micro_batches) next.push({replicas[static_cast<size_t>(r)]->pipeline_s(2), r});
  }
  for (int64_t given = n; given < micro_batches; ++given) {
    const auto [t, r] = next.top();
    next.pop();
    if (t == kNoFit) return kNoFit;
    longest = std::max(longest, t);
    const int64_t m = ++shares[static_cast<size_t>(r)];
    if (given + 1 < micro_batches) next.push({replicas[static_cast<size_t>(r)]->pipeline_s(m + 1), r});
  }
  return longest;
}

double model_work_lower_bound_s(const ClusterIndex& index, const SearchJob& job) {
  const SearchCluster& cluster = index.cluster();
  double layer = kNoFit, embed = kNoFit, head = kNoFit;
  for (const SearchNode& node : cluster.nodes) {
    DeviceRates rates = cluster.types[static_cast<size_t>(node.type)].rates;
    rates.tp = rates.next_stage = rates.replicas = Link{};  // free links: compute only
    auto time = [&](bool first, bool last) {
      const StageCost c = estimate_stage(job.facts, {0, 0, first, last, 1, job.micro_batch, job.seq_len, 1}, rates);
      return c.times.forward_s + c.times.backward_s;
    };
    const double middle = time(false, false);
    layer = std::min(layer, middle);
    embed = std::min(embed, std::max(0.0, time(true, false) - middle));
    head = std::min(head, std::max(0.0, time(false, true) - middle));
  }
  return static_cast<double>(job.facts.layers) * layer + embed + head;
}

}  // namespace hetu::plan
