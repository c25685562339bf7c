// Transitions without collectives: identity, point_to_point (same layout on another group of
// the same size: a pipeline edge) and local_slice (every device keeps a sub-box of what it
// holds: duplicate -> split, split -> finer split).
#include <algorithm>

#include "lib/hspmd/transitions.h"

namespace hetu::comm_detail {

bool identity_applies(const PlanContext& ctx) {
  if (ctx.src_shards.size() != ctx.dst_shards.size()) return false;
  return std::all_of(ctx.dst_shards.begin(), ctx.dst_shards.end(), [&](const DeviceShard& d) {
    const DeviceShard* s = ctx.src_of(d.device);
    return s != nullptr && s->shard == d.shard;
  });
}

Steps identity_build(const PlanContext& ctx) {
  std::vector<CommOp> ops;
  for (const DeviceShard& d : ctx.dst_shards) ops.push_back(CopyOp{d.device, d.shard.box});
  return {ctx.step("identity", std::move(ops))};
}

// Member by member the same state on a group of the same size, under the same relation;
// at least one group differs. Device i of a source group sends to device i of its peer.
bool point_to_point_applies(const PlanContext& ctx) {
  if (ctx.src.size() != ctx.dst.size() || !(ctx.src.relation() == ctx.dst.relation())) return false;
  bool moved = false;
  for (int64_t m = 0; m < ctx.src.size(); ++m) {
    const UnionMember& s = ctx.src.member(m);
    const UnionMember& d = ctx.dst.member(m);
    if (!(s.state == d.state) || s.group.size() != d.group.size()) return false;
    moved = moved || !(s.group == d.group);
  }
  return moved;
}

Steps point_to_point_build(const PlanContext& ctx) {
  SendRecvOp op;
  for (int64_t m = 0; m < ctx.src.size(); ++m) {
    const DeviceGroup& from = ctx.src.member(m).group;
    const DeviceGroup& to = ctx.dst.member(m).group;
    for (int64_t i = 0; i < from.size(); ++i)
      op.transfers.push_back(Transfer{from.at(i), to.at(i), ctx.dst_of(to.at(i))->shard.box});
  }
  return {ctx.step("point_to_point", {std::move(op)})};
}

bool local_slice_applies(const PlanContext& ctx) {
  return std::all_of(ctx.dst_shards.begin(), ctx.dst_shards.end(), [&](const DeviceShard& d) {
    const DeviceShard* s = ctx.src_of(d.device);
    return s != nullptr && s->shard.same_layer(d.shard) && s->shard.box.contains(d.shard.box);
  });
}

Steps local_slice_build(const PlanContext& ctx) {
  std::vector<CommOp> ops;
  for (const DeviceShard& d : ctx.dst_shards) ops.push_back(CopyOp{d.device, d.shard.box});
  return {ctx.step("local_slice", std::move(ops))};
}

}  // namespace hetu::comm_detail
