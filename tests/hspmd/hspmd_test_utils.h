// Helpers for the HSPMD tests: short constructors for annotations, and the numeric check of
// a plan with the reference executor (plan_simulator.h) against the geometry's boxes of a
// random global tensor, plus the agreement of the plan with the generic repartition.
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "lib/hspmd/plan_simulator.h"
#include "lib/hspmd/planner.h"

namespace hetu::test {

inline DistState ds(std::vector<MeshAxis> axes) { return DistState(std::move(axes)); }
inline MeshAxis S(int64_t dim, int64_t n) { return MeshAxis::split(dim, n); }
inline MeshAxis D(int64_t n) { return MeshAxis::duplicate(n); }
inline MeshAxis P(int64_t n) { return MeshAxis::partial(n); }
inline Union on(std::vector<DeviceId> devices, DistState state) {
  return Union::single(DeviceGroup(std::move(devices)), std::move(state));
}
inline UnionMember member(std::vector<DeviceId> devices, DistState state) {
  return UnionMember{DeviceGroup(std::move(devices)), std::move(state)};
}

struct PlanCheck {
  CommPlan plan;
  std::string problem;          // "" when the plan lays out the tensor as dst says
  std::string generic_problem;  // the same for the generic repartition
  bool agrees = false;          // both give identical buffers on every device
};

// Plans src -> dst, runs the plan and the generic repartition on random integer data, and
// checks both against the geometry of dst.
inline PlanCheck check_plan(const Union& src, const Union& dst, const Shape& shape, uint64_t seed = 11) {
  PlanCheck out{plan_comm(src, dst, shape), "", "", false};
  const std::vector<double> global = random_integers(shape_numel(shape), seed);
  const DeviceBuffers a = simulate(out.plan, src, dst, global, seed + 1);
  const DeviceBuffers b = simulate(plan_repartition(src, dst, shape), src, dst, global, seed + 1);
  out.problem = check_buffers(dst, shape, global, a);
  out.generic_problem = check_buffers(dst, shape, global, b);
  out.agrees = a.size() == b.size();
  for (const auto& [device, buffer] : a)
    out.agrees = out.agrees && b.count(device) && b.at(device).values == buffer.values;
  return out;
}

// REQUIREs a correct plan that agrees with the repartition; returns it.
inline CommPlan require_plan(const Union& src, const Union& dst, const Shape& shape) {
  INFO(src.to_string() << "  ->  " << dst.to_string() << "  shape " << shape_str(shape));
  PlanCheck c = check_plan(src, dst, shape);
  INFO(c.plan.to_string());
  REQUIRE(c.problem == "");
  REQUIRE(c.generic_problem == "");
  REQUIRE(c.agrees);
  return c.plan;
}

// Every DistState on n devices: one axis of S(0), S(1), D, P on n devices; on 4 devices also
// two axes of different kinds, 2 x 2.
inline std::vector<DistState> placements(int64_t n) {
  const std::vector<MeshAxis> kinds = {S(0, 1), S(1, 1), D(1), P(1)};
  auto with = [](MeshAxis a, int64_t count) {
    a.count = count;
    return a;
  };
  if (n == 1) return {DistState()};
  std::vector<DistState> out;
  for (const MeshAxis& k : kinds) out.push_back(DistState({with(k, n)}));
  if (n == 4)
    for (const MeshAxis& outer : kinds)
      for (const MeshAxis& inner : kinds)
        if (!outer.same_kind(inner)) out.push_back(DistState({with(outer, 2), with(inner, 2)}));
  return out;
}

}  // namespace hetu::test
