// ZeRO-1 placements (zero_state_placement): the state split over every holder of a
// parameter, replicas of different shape included, checked against boxes written out by
// hand; and the planner's grad -> state and state -> param plans run on the reference
// simulator against the geometry (a reduce-scatter and an all-gather in effect).
#include <catch2/catch.hpp>

#include "lib/hspmd/redistribute.h"
#include "lib/hspmd/tensor_placement.h"
#include "tests/hspmd/hspmd_test_utils.h"

namespace hetu {
namespace {

using test::check_plan;

TEST_CASE("zero-1 splits the state of replicas of different shape over every holder", "[hspmd]") {
  // tp 2 (rows split) on {0,1} next to tp 1 on {2}, shape (12, 4): rows 0-5 on 0, 6-11 on 1,
  // all on 2. The state: rows 0-3 on 0, 4-7 on 2, 8-11 on 1, each inside its parameter box.
  const Union param({{DeviceGroup({0, 1}), DistState::split(0, 2)}, {DeviceGroup({2}), DistState()}},
                    UnionRelation::replica());
  const TensorPlacement p = zero_state_placement(replicated_state_placement("w", {12, 4}, {12, 4}, param));
  CHECK(p.param == param);
  CHECK(p.grad == p.state);
  CHECK(view_box(p, p.state, 0) == Box{{0, 0}, {4, 4}});
  CHECK(view_box(p, p.state, 2) == Box{{4, 0}, {4, 4}});
  CHECK(view_box(p, p.state, 1) == Box{{8, 0}, {4, 4}});
  for (DeviceId d : {0, 1, 2}) CHECK(first_holder(p.state, d));  // every box is written once
  // The gradient sum lands in the state; the update gathers back into the parameter.
  const test::PlanCheck sync = check_plan(dual_annotation(param), p.state, p.view);
  CHECK(sync.problem.empty());
  CHECK(sync.agrees);
  const test::PlanCheck gather = check_plan(p.state, param, p.view);
  CHECK(gather.problem.empty());
  CHECK(gather.agrees);
  const test::PlanCheck load = check_plan(param, p.state, p.view);
  CHECK(load.problem.empty());
  CHECK(load.plan.transition == "local_slice");
}

TEST_CASE("zero-1 state follows the tp split and the view", "[hspmd]") {
  // dp 2 x tp 2, qkv (12, 4) viewed as (3, 4, 4) and split on view dim 1: holders ordered by
  // their box start (0, 2, 1, 3), one view row each of q, k and v.
  const Union param({{DeviceGroup({0, 1}), DistState::split(1, 2)}, {DeviceGroup({2, 3}), DistState::split(1, 2)}},
                    UnionRelation::replica());
  const TensorPlacement p = zero_state_placement(replicated_state_placement("qkv", {12, 4}, {3, 4, 4}, param));
  CHECK(p.state == Union::single(DeviceGroup({0, 2, 1, 3}), DistState::split(1, 4)));
  CHECK(view_box(p, p.state, 1) == Box{{0, 2, 0}, {3, 1, 4}});
  CHECK(local_shape(p.shape, p.view, view_box(p, p.state, 1)) == Shape{3, 4});
  CHECK(check_plan(dual_annotation(param), p.state, p.view).agrees);
  CHECK(check_plan(p.state, param, p.view).agrees);
  // A 1-D tensor duplicated over a tp group and two replicas: split over all four, 10 = 3+3+2+2.
  const Union bias({{DeviceGroup({0, 1}), DistState::duplicate(2)}, {DeviceGroup({2, 3}), DistState::duplicate(2)}},
                   UnionRelation::replica());
  const TensorPlacement b = zero_state_placement(replicated_state_placement("b", {10}, {10}, bias));
  CHECK(view_box(b, b.state, 3) == Box{{8}, {2}});
  CHECK(check_plan(dual_annotation(bias), b.state, b.view).agrees);
}

TEST_CASE("zero-1 leaves parameters without copies and too short tensors alone", "[hspmd]") {
  // tp 2 in one replica: every element has one holder; nothing to split.
  const Union tp = Union::single(DeviceGroup({0, 1}), DistState::split(0, 2));
  const TensorPlacement a = zero_state_placement(replicated_state_placement("w", {8, 4}, {8, 4}, tp));
  CHECK(a.state == tp);
  CHECK(a.grad == tp);
  // Three holders of a tensor of length 2: the split would leave a holder empty.
  const Union three = Union::single(DeviceGroup({0, 1, 2}), DistState::duplicate(3));
  CHECK(zero_state_placement(replicated_state_placement("s", {2}, {2}, three)).state == three);
}

}  // namespace
}  // namespace hetu
