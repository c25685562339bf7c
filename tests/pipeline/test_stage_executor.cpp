// StageExecutor takes its pipeline-edge plans from the strategy's PlanCache: building an
// executor plans each edge (activation forward, gradient back) once, the neighbouring stage
// and any later executor of the same shapes reuse those plans, and the cached plans are the
// planner's (plan_comm called directly in the test).
#include <catch2/catch.hpp>

#include "lib/hspmd/planner.h"
#include "lib/hspmd/redistribute.h"
#include "lib/pipeline/stage_executor.h"

using namespace hetu;
using namespace hetu::pipeline;

namespace {

// One replica: stage 0 on devices {0, 1} (tp 2), stage 1 on {2} (tp 1).
ParallelLayout two_stages() {
  ParallelLayout l;
  l.global_batch = 2;
  l.replicas = {{.stages = {{DeviceGroup({0, 1}), 0, 1}, {DeviceGroup({2}), 2, 3}}, .batch = 2, .micro_batch = 1}};
  return l;
}

TEST_CASE("stage executor: edge plans come from the plan cache, planned once", "[pipeline]") {
  const ParallelLayout layout = two_stages();
  std::unique_ptr<Communicator> comm = make_local_communicator();  // the constructor only plans
  PlanCache plans;
  const Shape hidden{1, 4, 8};
  StageExecutor first(layout, {0, 0, 0}, comm.get(), plans, hidden);
  CHECK(plans.size() == 2);  // the edge's activation plan and its gradient plan
  StageExecutor last(layout, {0, 1, 0}, comm.get(), plans, hidden);
  CHECK(plans.size() == 2);  // the same edge seen from the other side
  StageExecutor again(layout, {0, 0, 1}, comm.get(), plans, hidden);
  CHECK(plans.size() == 2);

  const Union src = Union::single(DeviceGroup({0, 1}), DistState::duplicate(2));
  const Union dst = Union::single(DeviceGroup({2}), DistState::duplicate(1));
  CHECK(plans.get(src, dst, hidden).to_string() == plan_comm(src, dst, hidden).to_string());
  CHECK(plans.get(dual_annotation(dst), dual_annotation(src), hidden).to_string() ==
        plan_comm(dual_annotation(dst), dual_annotation(src), hidden).to_string());
  CHECK(plans.size() == 2);  // both looked up, neither planned again

  StageExecutor eval(layout, {0, 1, 0}, comm.get(), plans, {3, 4, 8});  // another activation shape
  CHECK(plans.size() == 4);
}

}  // namespace
