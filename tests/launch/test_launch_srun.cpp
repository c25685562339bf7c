// hetu launch under srun in a heterogeneous allocation (launch_srun.h): the tasks each
// component runs for the ranks' hosts, and the job-wide rank of a task srun reports dead
// (numbered within its component, as Slurm 22.05 prints it), against hand-written expectations.
#include <catch2/catch.hpp>

#include "lib/launch/launch_srun.h"
#include "lib/util/error.h"

using namespace hetu;
using namespace hetu::launch;

namespace {

const std::vector<HetComponent> kComponents = {{0, {"a1", "a2"}}, {1, {"b"}}, {2, {"c"}}};

}  // namespace

TEST_CASE("launch srun: tasks per component, components without ranks left out", "[launch]") {
  const std::vector<HetGroupTasks> all = het_group_tasks(kComponents, {"a1", "a1", "a2", "b", "c", "c"});
  CHECK(all == std::vector<HetGroupTasks>{{0, 3}, {1, 1}, {2, 2}});
  const std::vector<HetGroupTasks> no_b = het_group_tasks(kComponents, {"a1", "a2", "c"});  // b's device lost
  CHECK(no_b == std::vector<HetGroupTasks>{{0, 2}, {2, 1}});
  CHECK_THROWS_AS(het_group_tasks(kComponents, {"a1", "x"}), UsageError);       // a host of no component
  CHECK_THROWS_AS(het_group_tasks(kComponents, {"b", "a1"}), UsageError);       // not in component order
  CHECK_THROWS_AS(het_group_tasks(kComponents, {"a1", "b", "a2"}), UsageError);  // component 0 split
}

TEST_CASE("launch srun: a dead task's rank counts the components before it", "[launch]") {
  const std::vector<HetGroupTasks> tasks = {{0, 3}, {1, 1}, {2, 2}};
  CHECK(het_rank(kComponents, tasks, "srun: error: a2: task 2: Killed", 2) == 2);
  CHECK(het_rank(kComponents, tasks, "srun: error: b: task 0: Killed", 0) == 3);
  CHECK(het_rank(kComponents, tasks, "srun: error: c: task 1: Exited with exit code 1", 1) == 5);
  // Component 1 without ranks: c's tasks follow component 0's.
  CHECK(het_rank(kComponents, {{0, 2}, {2, 1}}, "srun: error: c: task 0: Killed", 0) == 2);
  CHECK_THROWS_AS(het_rank(kComponents, tasks, "srun: error: zz: task 0: Killed", 0), UsageError);
  CHECK_THROWS_AS(het_rank(kComponents, tasks, "Exit code: 1", 0), UsageError);
}
