// The pieces of the layout search (lib/plan/replica_search.h) against brute force on a small
// hand-made cluster of two device types behind a slow link: the share allocation against every
// share vector, the best layer split (with its bounds) against every split timed by
// pipeline_time, both schedules, with a memory limit that rules some of them out.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>

#include "lib/plan/replica_search.h"

using namespace hetu::plan;
using hetu::pipeline::ScheduleKind;

namespace {

SearchCluster cluster() {
  SearchCluster c;
  SearchDeviceType fast{"fast", {}, 0, {}}, slow{"slow", {}, 0, {}};
  fast.rates.flops_per_s = 1e12;
  fast.rates.memory_bytes_per_s = 1e11;
  slow.rates.flops_per_s = 3e11;
  slow.rates.memory_bytes_per_s = 4e10;
  slow.memory_bytes = 50e6;  // a few layers' training state and activations, not the whole model
  c.types = {fast, slow};
  c.nodes = {{0, 2}, {1, 1}, {0, 1}};
  const Link in{10e9, 2e-6}, out{1e8, 1e-4};
  for (size_t a = 0; a < 3; ++a) {
    c.links.emplace_back();
    for (size_t b = 0; b < 3; ++b) c.links[a].push_back(a == b ? in : out);
  }
  return c;
}

SearchJob job() {
  SearchJob j;
  j.facts.layers = 6;
  j.facts.layer_params = 1e6;
  j.facts.first_params = 2e6;
  j.facts.last_params = 2e6;
  j.facts.layer_forward_flops_per_token = 6e6;
  j.facts.head_forward_flops_per_token = 4e6;
  j.facts.layer_activation_bytes_per_token = 2e3;
  j.facts.head_activation_bytes_per_token = 1e3;
  j.facts.hidden_bytes_per_token = 512;
  j.micro_batch = 2;
  j.seq_len = 128;
  return j;
}

// The pipeline time of `split` over `places`, straight from the cost model; infinity past memory.
double timed(const ClusterIndex& index, const SearchJob& j, ScheduleKind kind, const std::vector<StagePlace>& places,
             const std::vector<int64_t>& split, int64_t m) {
  std::vector<StageCost> costs;
  for (size_t s = 0, layer = 0; s < places.size(); layer += static_cast<size_t>(split[s]), ++s) {
    const Link next = s + 1 < places.size() ? index.between(places[s], places[s + 1]) : Link{};
    costs.push_back(stage_cost(index, j, places[s], next, s + 1 < places.size() ? &places[s + 1] : nullptr, static_cast<int64_t>(layer), split[s], s == 0,
                               s + 1 == places.size(), 1));
  }
  const LayoutPrediction p = predict_layout({{kind, m, costs}});
  for (size_t s = 0; s < places.size(); ++s) {
    const double memory = index.cluster().types[static_cast<size_t>(places[s].type)].memory_bytes;
    if (memory > 0 && p.peak_bytes[0][s] > memory) return kNoFit;
  }
  return p.pipeline_s;
}

void each_split(int64_t layers, int64_t parts, const std::function<void(const std::vector<int64_t>&)>& fn) {
  std::vector<int64_t> split;
  std::function<void(int64_t)> go = [&](int64_t left) {
    if (static_cast<int64_t>(split.size()) == parts - 1) {
      split.push_back(left);
      fn(split);
      split.pop_back();
      return;
    }
    for (int64_t k = 1; k <= left - (parts - 1 - static_cast<int64_t>(split.size())); ++k) {
      split.push_back(k);
      go(left - k);
      split.pop_back();
    }
  };
  go(layers);
}

}  // namespace

TEST_CASE("best_layer_split: the shortest fitting pipeline of every split", "[replica_search]") {
  const SearchCluster c = cluster();
  const ClusterIndex index(c);
  const SearchJob j = job();
  // fast:0, slow:0 (tight memory), fast:1 on another node: three stages behind slow links.
  const std::vector<StagePlace> places = {index.place(0, 1), index.place(2, 1), index.place(3, 1)};
  for (ScheduleKind kind : {ScheduleKind::one_f_one_b, ScheduleKind::gpipe}) {
    for (int64_t m : {1, 3, 8}) {
      INFO("schedule " << (kind == ScheduleKind::gpipe ? "gpipe" : "1f1b") << ", " << m << " micro-batches");
      double best = kNoFit;
      int64_t fitting = 0, splits = 0;
      each_split(j.facts.layers, 3, [&](const std::vector<int64_t>& split) {
        const double t = timed(index, j, kind, places, split, m);
        ++splits;
        fitting += t < kNoFit;
        best = std::min(best, t);
      });
      REQUIRE(splits == 10);
      CHECK(fitting < splits);  // the memory limit rules some out
      std::optional<ReplicaCandidate> found = best_layer_split(index, j, kind, places, m, 1000000);
      REQUIRE(found);
      CHECK(found->pipeline_s(m) == Approx(best).epsilon(1e-12));
      CHECK(timed(index, j, kind, places, found->layers, m) == Approx(best).epsilon(1e-12));
    }
  }
}

TEST_CASE("allocate_shares: the shortest longest pipeline of every share vector", "[replica_search]") {
  const SearchCluster c = cluster();
  const ClusterIndex index(c);
  const SearchJob j = job();
  for (ScheduleKind kind : {ScheduleKind::one_f_one_b, ScheduleKind::gpipe}) {
    // fast:0 alone; the slow device (with the embedding and one layer: GPipe runs out of its
    // memory past 3 micro-batches) then fast:3 behind the slow link; fast:1 alone.
    ReplicaCandidate a = make_replica(index, j, kind, {index.place(0, 1)}, {6});
    ReplicaCandidate b = make_replica(index, j, kind, {index.place(2, 1), index.place(3, 1)}, {1, 5});
    ReplicaCandidate d = make_replica(index, j, kind, {index.place(1, 1)}, {6});
    CHECK(b.pipeline_s(3) < kNoFit);
    CHECK(b.pipeline_s(4) == (kind == ScheduleKind::gpipe ? kNoFit : b.pipeline_s(4)));
    for (int64_t total : {3, 7, 12}) {
      INFO((kind == ScheduleKind::gpipe ? "gpipe" : "1f1b") << ", " << total << " micro-batches");
      std::vector<ReplicaCandidate*> replicas{&a, &b, &d};
      double best = kNoFit;
      for (int64_t x = 1; x <= total - 2; ++x)
        for (int64_t y = 1; x + y <= total - 1; ++y) {
          const int64_t z = total - x - y;
          best = std::min(best, std::max({timed(index, j, kind, a.places, a.layers, x),
                                          timed(index, j, kind, b.places, b.layers, y),
                                          timed(index, j, kind, d.places, d.layers, z)}));
        }
      REQUIRE(best < kNoFit);
      std::vector<int64_t> shares;
      const double got = allocate_shares(replicas, total, shares);
      CHECK(got == Approx(best).epsilon(1e-12));
      REQUIRE(shares.size() == 3);
      CHECK(shares[0] + shares[1] + shares[2] == total);
      CHECK(std::min({shares[0], shares[1], shares[2]}) >= 1);
    }
    // A replica repeated (as the search by runs hands them over) shares its memo.
    std::vector<ReplicaCandidate*> twice{&d, &d};
    std::vector<int64_t> shares;
    CHECK(allocate_shares(twice, 5, shares) == Approx(timed(index, j, kind, d.places, d.layers, 3)).epsilon(1e-12));
    CHECK(shares == std::vector<int64_t>{3, 2});
  }
}

TEST_CASE("ReplicaCandidate: past exact_up_to the pipeline time follows the steady state", "[replica_search]") {
  const SearchCluster c = cluster();
  const ClusterIndex index(c);
  const SearchJob j = job();
  for (ScheduleKind kind : {ScheduleKind::one_f_one_b, ScheduleKind::gpipe}) {
    // Three stages of unlike speed behind slow links (1F1B's steady state alternates two beats);
    // the search by runs extrapolates past 4 x 3 + 4.
    ReplicaCandidate exact = make_replica(index, j, kind, {index.place(0, 1), index.place(1, 1), index.place(3, 1)}, {1, 3, 2});
    ReplicaCandidate extrapolated = exact;
    extrapolated.exact_up_to = 16;
    for (int64_t m : {17, 18, 23, 40, 101}) {
      INFO((kind == ScheduleKind::gpipe ? "gpipe" : "1f1b") << ", " << m << " micro-batches");
      CHECK(extrapolated.pipeline_s(m) == Approx(exact.pipeline_s(m)).epsilon(1e-9));
    }
  }
}

// A tp group over two nodes waits for its slowest member at every collective: a fast device
// paired with a slow one is priced as the slow type (by hand: the estimator with the slow
// type's rates), whichever node comes first, with the smaller memory.
TEST_CASE("stage_cost: a tp group across unlike nodes runs at its slowest type", "[replica_search]") {
  const SearchCluster c = cluster();
  const ClusterIndex index(c);
  const SearchJob j = job();
  for (const int64_t first : {1, 2}) {  // fast then slow (devices 1-2), slow then fast (devices 2-3)
    const StagePlace place = index.place(first, 2);
    REQUIRE(place.first_node != place.last_node);
    DeviceRates slow = c.types[1].rates;
    slow.tp = c.links[0][1];
    slow.replicas = place.everyone;
    const StageCost want = estimate_stage(j.facts, {0, 2, true, true, 2, j.micro_batch, j.seq_len, 1}, slow);
    const StageCost got = stage_cost(index, j, place, Link{}, nullptr, 0, 3, true, true, 1);
    INFO("devices " << first << "-" << first + 1);
    CHECK(got.times.forward_s == Approx(want.times.forward_s).epsilon(1e-12));
    CHECK(got.times.backward_s == Approx(want.times.backward_s).epsilon(1e-12));
    CHECK(index.memory_bytes(place) == 50e6);
  }
}

// Times a profile measured on a rank of a tp group replace the split of the tp-1 times for
// stages of that tp only.
TEST_CASE("stage_cost: times measured at a tp are used as they are for that tp", "[replica_search]") {
  SearchCluster c = cluster();
  c.types[0].rates.measured = MeasuredTimes{3, 5, 1, 2, 7, 11};  // tp 1: split over tp
  MeasuredTimes at_two{13, 17, 0, 0, 0, 0};
  at_two.includes_tp = true;
  c.types[0].measured_at_tp.push_back({2, at_two});
  const ClusterIndex index(c);
  const SearchJob j = job();
  const StageCost two = stage_cost(index, j, index.place(0, 2), Link{}, nullptr, 1, 2, false, false, 1);
  CHECK(two.times.forward_s == Approx(2 * 13.0));
  CHECK(two.times.backward_s == Approx(2 * 17.0));
  const StageCost one = stage_cost(index, j, index.place(0, 1), Link{}, nullptr, 1, 2, false, false, 1);
  CHECK(one.times.forward_s == Approx(2 * 3.0));
  CHECK(one.times.backward_s == Approx(2 * 5.0));
}
