// Choosing a profile's link curve (lib/plan/profiled_link.h) by device-type pair and GPU
// counts, each case against the curve a reader picks by hand; and a stage edge under tp
// (Note [Stage edges], lib/plan/stage_estimate.cpp) against its transfers added up by hand.
#include <catch2/catch.hpp>

#include "lib/plan/profiled_link.h"
#include "lib/plan/stage_estimate.h"

using namespace hetu;
using namespace hetu::plan;

namespace {

profile::LinkProfile curve(const std::string& scope, const std::string& type, int64_t gpus, const std::string& peer,
                           int64_t peer_gpus, double gbs) {
  profile::LinkProfile l;
  l.scope = scope;
  l.device_type = type;
  l.gpus = gpus;
  l.peer_type = peer;
  l.peer_gpus = peer_gpus;
  l.bandwidth_gbs_poly = {gbs};
  return l;
}

// The GB/s of the curve chosen, 0 when none.
double chosen_gbs(const profile::Profile& p, const char* scope, const LinkEnd& from, const LinkEnd& to) {
  const profile::LinkProfile* l = profiled_curve(p, scope, from, to);
  return l == nullptr ? 0.0 : l->bandwidth_gbs_poly.at(0);
}

}  // namespace

TEST_CASE("profiled link: the pair's curve, at the GPUs taking part", "[profiled_link]") {
  const profile::Profile p({}, {
      curve("between", "A", 0, "", 0, 50),      // A's own curve, any peer
      curve("between", "A", 1, "B", 1, 1),
      curve("between", "A", 4, "B", 4, 4),
      curve("between", "A", 8, "B", 8, 8),
      curve("between", "A", 8, "B", 2, 82),
      curve("between", "B", 8, "B", 8, 30),
      curve("within", "A", 2, "", 0, 100),
      curve("within", "A", 8, "", 0, 800),
  });
  CHECK(chosen_gbs(p, "between", {"A", 4}, {"B", 4}) == 4);
  CHECK(chosen_gbs(p, "between", {"B", 4}, {"A", 4}) == 4);    // a pair's curve in either order
  CHECK(chosen_gbs(p, "between", {"A", 8}, {"B", 2}) == 82);   // the peer's count too
  CHECK(chosen_gbs(p, "between", {"A", 6}, {"B", 6}) == 4);    // the largest count below
  CHECK(chosen_gbs(p, "between", {"A", 16}, {"B", 16}) == 8);
  CHECK(chosen_gbs(p, "between", {"A", 1}, {"B", 1}) == 1);
  CHECK(chosen_gbs(p, "between", {"A", 8}, {"A", 8}) == 50);   // no A-A pair: A's own curve
  CHECK(chosen_gbs(p, "between", {"B", 8}, {"B", 8}) == 30);
  CHECK(chosen_gbs(p, "between", {"C", 1}, {"C", 1}) == 0);    // none for C
  CHECK(chosen_gbs(p, "within", {"A", 8}, {"B", 1}) == 800);   // within: the node's own type
  CHECK(chosen_gbs(p, "within", {"A", 1}, {}) == 100);         // no count below: the smallest above
  CHECK(chosen_gbs(p, "within", {"A", 4}, {}) == 100);
}

TEST_CASE("profiled link: of two equal matches the slower", "[profiled_link]") {
  // Each type's own curve (a profile of two single-type sets): the slower type's link prices the path.
  const profile::Profile own({}, {curve("between", "fast", 0, "", 0, 20), curve("between", "slow", 0, "", 0, 2)});
  CHECK(chosen_gbs(own, "between", {"fast", 1}, {"slow", 1}) == 2);
  CHECK(chosen_gbs(own, "between", {"slow", 1}, {"fast", 1}) == 2);
  // The two directions of a pair measured apart.
  const profile::Profile both({}, {curve("between", "A", 2, "B", 2, 3), curve("between", "B", 2, "A", 2, 0.5)});
  CHECK(chosen_gbs(both, "between", {"A", 2}, {"B", 2}) == 0.5);
}

TEST_CASE("stage edge: one activation across the link in slices, all-gathered on the far side", "[profiled_link]") {
  const double hidden = 64e6;  // bytes of one micro-batch's activation
  DeviceRates rates;
  rates.next_stage = Link{2e9, 0};        // the node's link: 2 GB/s
  rates.next_stage_gather = Link{20e9, 0};  // among the next stage's devices: 20 GB/s each pair
  // tp 1 -> tp 1: one send of the whole activation.
  CHECK(stage_edge_s(hidden, 1, rates) == Approx(64e6 / 2e9));
  // tp 8 -> tp 8: eight senders on the node share its link, 8 MB each (64 MB through it), then
  // a ring all-gather of the 8 MB slices, 7 steps.
  rates.next_stage_tp = 8;
  rates.next_stage.shared_by = 8;
  CHECK(stage_edge_s(hidden, 8, rates) == Approx(8 * 8e6 / 2e9 + 7 * 8e6 / 20e9));
  // tp 2 -> tp 8: two senders, 32 MB each (4 slices of 8 MB), then the same all-gather.
  rates.next_stage.shared_by = 2;
  CHECK(stage_edge_s(hidden, 2, rates) == Approx(2 * 32e6 / 2e9 + 7 * 8e6 / 20e9));
  // tp 8 -> tp 2: two slices from two of the eight senders, then one gather step of 32 MB.
  rates.next_stage_tp = 2;
  CHECK(stage_edge_s(hidden, 8, rates) == Approx(2 * 32e6 / 2e9 + 32e6 / 20e9));
}
