// Internal to the planner: the context every transition sees and the transition functions,
// one "applies" predicate and one builder each. planner.cpp holds the table (the order of
// preference); the families live in transitions_local.cpp (identity, point_to_point,
// local_slice), transitions_collective.cpp (all_reduce, all_gather, reduce_scatter,
// all_to_all and their split_ forms across union members) and repartition.cpp (the generic
// fallback). Not part of the public API: include planner.h.
#pragma once

#include <string_view>
#include <vector>

#include "lib/hspmd/comm_plan.h"

namespace hetu::comm_detail {

struct PlanContext {
  PlanContext(const Union& src_annotation, const Union& dst_annotation, const Shape& global_shape);

  const Union& src;
  const Union& dst;
  const Shape& shape;
  std::vector<DeviceShard> src_shards;
  std::vector<DeviceShard> dst_shards;

  const DeviceShard* src_of(DeviceId device) const;  // nullptr when not a source device
  const DeviceShard* dst_of(DeviceId device) const;
  bool same_device_set() const;
  // A step to the destination layout made of `ops`.
  CommStep step(std::string_view name, std::vector<CommOp> ops) const;
};

using Steps = std::vector<CommStep>;

struct Transition {
  std::string_view name;
  bool (*applies)(const PlanContext&);
  Steps (*build)(const PlanContext&);
};

// transitions_local.cpp
bool identity_applies(const PlanContext& ctx);
Steps identity_build(const PlanContext& ctx);
bool point_to_point_applies(const PlanContext& ctx);
Steps point_to_point_build(const PlanContext& ctx);
bool local_slice_applies(const PlanContext& ctx);
Steps local_slice_build(const PlanContext& ctx);

// transitions_collective.cpp: the plain forms work inside each set of devices that share a
// source member and a destination member; the split_ forms work across members.
bool all_reduce_applies(const PlanContext& ctx);
Steps all_reduce_build(const PlanContext& ctx);
bool all_gather_applies(const PlanContext& ctx);
Steps all_gather_build(const PlanContext& ctx);
bool reduce_scatter_applies(const PlanContext& ctx);
Steps reduce_scatter_build(const PlanContext& ctx);
bool all_to_all_applies(const PlanContext& ctx);
Steps all_to_all_build(const PlanContext& ctx);
bool split_all_reduce_applies(const PlanContext& ctx);
Steps split_all_reduce_build(const PlanContext& ctx);
bool split_reduce_scatter_applies(const PlanContext& ctx);
Steps split_reduce_scatter_build(const PlanContext& ctx);
bool split_all_gather_applies(const PlanContext& ctx);
Steps split_all_gather_build(const PlanContext& ctx);

// repartition.cpp: always applies.
bool repartition_applies(const PlanContext& ctx);
Steps repartition_build(const PlanContext& ctx);

}  // namespace hetu::comm_detail
