// The communication planner: a pure function from a source annotation and a destination
// annotation (Unions over one global shape) to a CommPlan (comm_plan.h). Transitions are a
// table of small named functions, each with an "applies" predicate, tried in this order:
//   identity, point_to_point, local_slice, all_reduce, all_gather, reduce_scatter,
//   all_to_all, split_all_reduce, split_reduce_scatter, split_all_gather, hierarchical,
//   repartition
// The plain collectives stay inside each source member; the split_ ones cut to the finest
// common block across members; hierarchical composes two of the above through an
// intermediate annotation (a collective across members, then one inside each, or the other
// way round; the cheaper by comm_volume, and only when it moves no more data than the
// repartition); repartition (batched send/recv of box intersections) applies to any pair and
// is the fallback.
//
// Worked example, shape {8, 6}:
//   plan_comm(Union::single({0,1}, DistState::split(0, 2)),
//             Union::single({0,1}, DistState::duplicate(2)), {8, 6})
//   -> transition "all_gather", one step: all_gather {0,1} [0:4, 0:6] [4:8, 0:6]
//   plan_comm(Union::single({0,1,2,3}, S(1)x4), Union::single({4,5}, S(1)x2), {8, 6})
//   -> "repartition" (6 cols split 2, 2, 1, 1 and 3, 3), one batched exchange:
//      send_recv 0->4 [0:8, 0:2] 1->4 [0:8, 2:3] 1->5 [0:8, 3:4] 2->5 [0:8, 4:5] 3->5 [0:8, 5:6]
#pragma once

#include <string_view>
#include <vector>

#include "lib/hspmd/comm_plan.h"

namespace hetu {

// The table's names, in order of preference.
std::vector<std::string_view> transition_names();

// Not named plan(): callers write `CommPlan plan = plan_comm(...)`.
CommPlan plan_comm(const Union& src, const Union& dst, const Shape& global_shape);
// The generic repartition alone (the reference every specialised plan must agree with).
CommPlan plan_repartition(const Union& src, const Union& dst, const Shape& global_shape);
// One named transition; throws when it does not apply.
bool transition_applies(std::string_view transition, const Union& src, const Union& dst, const Shape& global_shape);
CommPlan plan_with(std::string_view transition, const Union& src, const Union& dst, const Shape& global_shape);

}  // namespace hetu
