// The enumerated sweep: every placement (every DistState with one or two mesh axes) on
// groups of 1 to 4 devices, the same on other groups (pipeline edges), and heterogeneous
// unions whose members have different TP (replica, partial, and uneven split relations on
// dim 0 and dim 1). Every ordered pair is planned; the plan and the generic repartition are
// run by the reference executor on random data and must both match the geometry of the
// destination and agree with each other bit for bit. Every transition must be chosen at
// least once.
#include <catch2/catch.hpp>

#include <cstdio>
#include <map>

#include "lib/util/error.h"
#include "tests/hspmd/hspmd_test_utils.h"

namespace hetu::test {
namespace {

const Shape kShape{7, 6};  // uneven for 2, 3 and 4 ways on dim 0; 4 ways on dim 1

std::vector<UnionRelation> relations(int64_t first_rows, int64_t first_cols) {
  return {UnionRelation::replica(), UnionRelation::partial(),
          UnionRelation::split(0, {first_rows, kShape[0] - first_rows}),
          UnionRelation::split(1, {first_cols, kShape[1] - first_cols})};
}

void add_if_valid(std::vector<Union>& out, Union u) {
  if (!annotation_error(u, kShape)) out.push_back(std::move(u));
}

std::vector<Union> annotations() {
  std::vector<Union> out;
  const std::vector<std::vector<DeviceId>> groups = {{0},    {0, 1},         {0, 1, 2}, {0, 1, 2, 3},
                                                      {4},    {4, 5},         {1, 0},    {4, 5, 6, 7}};
  for (const auto& g : groups)
    for (const DistState& s : placements(static_cast<int64_t>(g.size()))) add_if_valid(out, on(g, s));
  // Heterogeneous: TP=2 next to TP=1, TP=1 next to TP=3, and two 2-device members that
  // differ in their states.
  for (const UnionRelation& rel : relations(3, 4)) {
    for (const DistState& s : placements(2)) {
      add_if_valid(out, Union({member({0, 1}, s), member({2}, DistState())}, rel));
      add_if_valid(out, Union({member({4, 5}, s), member({6}, DistState())}, rel));  // another stage
    }
    for (const DistState& s : placements(3))
      add_if_valid(out, Union({member({0}, DistState()), member({1, 2, 3}, s)}, rel));
    for (const DistState& a : placements(2))
      for (const DistState& b : placements(2))
        if (!(a == b)) add_if_valid(out, Union({member({0, 1}, a), member({2, 3}, b)}, rel));
  }
  for (const UnionRelation& rel : {UnionRelation::replica(), UnionRelation::partial()})
    add_if_valid(out, Union({member({0, 1}, DistState::duplicate(2)), member({2}, DistState()),
                             member({3}, DistState())},
                            rel));
  return out;
}

}  // namespace

TEST_CASE("sweep: every annotation pair plans correctly and agrees with the repartition", "[hspmd]") {
  const std::vector<Union> all = annotations();
  std::map<std::string, int64_t> chosen;
  std::vector<std::string> failures;
  int64_t pairs = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    for (size_t j = 0; j < all.size(); ++j) {
      ++pairs;
      const std::string name = all[i].to_string() + "  ->  " + all[j].to_string();
      try {
        PlanCheck c = check_plan(all[i], all[j], kShape, 1000 * i + j);
        ++chosen[c.plan.transition];
        if (!c.problem.empty() || !c.generic_problem.empty() || !c.agrees)
          failures.push_back(name + ": " + c.plan.transition + ": " + c.problem + " | generic: " +
                             c.generic_problem + (c.agrees ? "" : " | plans disagree") + "\n" + c.plan.to_string());
      } catch (const Error& e) {
        failures.push_back(name + ": threw " + e.message() + " at " + e.where());
      }
    }
  }
  std::string summary;
  for (const auto& [transition, count] : chosen) summary += " " + transition + "=" + std::to_string(count);
  std::printf("hspmd sweep: %zu annotations, %lld annotation pairs checked;%s\n", all.size(),
              static_cast<long long>(pairs), summary.c_str());
  INFO(failures.size() << " failures; first: " << (failures.empty() ? "" : failures[0]));
  CHECK(failures.empty());
  for (std::string_view t : transition_names()) {
    INFO("transition " << t << " was never chosen");
    CHECK(chosen.count(std::string(t)) == 1);
  }
}

}  // namespace hetu::test
