// Strategy: placements kept in name order, looked up by name, one per tensor.
#include <catch2/catch.hpp>

#include "lib/runtime/strategy.h"
#include "lib/util/error.h"

namespace hetu::runtime {
namespace {

TensorPlacement duplicated(const std::string& name) {
  return replicated_state_placement(name, {4, 2}, {4, 2}, Union::single(DeviceGroup::range(0, 2), DistState::duplicate(2)));
}

TEST_CASE("make_strategy sorts placements by name and finds each", "[strategy]") {
  Strategy s = make_strategy("dp2", pipeline::ParallelLayout{}, {duplicated("wte"), duplicated("h.0.b"), duplicated("ln_f")});
  REQUIRE(s.placements.size() == 3);
  CHECK(s.placements[0].name == "h.0.b");
  CHECK(s.placements[1].name == "ln_f");
  CHECK(s.placements[2].name == "wte");
  CHECK(s.placement("ln_f").name == "ln_f");
  CHECK(s.plans != nullptr);
  CHECK_THROWS_AS(s.placement("lm_head"), Error);
}

TEST_CASE("make_strategy rejects two placements of one tensor", "[strategy]") {
  CHECK_THROWS_AS(make_strategy("bad", pipeline::ParallelLayout{}, {duplicated("wte"), duplicated("wte")}), Error);
}

}  // namespace
}  // namespace hetu::runtime
