// Collective transitions, derived from geometry rather than from state algebra, so they work
// for uneven splits, any dim and heterogeneous union members alike:
//  - reduction (all_reduce, reduce_scatter): partial -> not partial. Per partial scope, cut
//    the source boxes to their common refinement (the finest common block); per block, one
//    holder of each part forms a group (round robin over duplicates, as Hetu's
//    get_split_comm_groups_list); the group all-reduces the block when every member needs
//    all of it, or reduce-scatters it when the members' destination pieces tile it.
//  - gather (all_gather): per destination block, the receivers' source pieces must tile it;
//    one holder per piece forms a group, receivers holding nothing join with empty pieces.
//  - all_to_all: the distinct source boxes of a layer, one holder each, exchange the parts
//    each member's destination box needs.
// The plain transitions build inside each set of devices sharing a source member and a
// destination member; the split_ ones across members.
// Devices whose shard does not change keep it (a copy).
#include <algorithm>
#include <optional>

#include "lib/hspmd/transitions.h"

namespace hetu::comm_detail {
namespace {

using Devices = std::vector<DeviceId>;

struct Built {
  std::vector<CommOp> ops;
  int64_t all_reduces = 0;
  int64_t reduce_scatters = 0;
  int64_t collectives = 0;  // gathers or all_to_alls
};
using Builder = std::optional<Built> (*)(const PlanContext&, const Devices&);

const Shard& src_shard(const PlanContext& ctx, DeviceId d) { return ctx.src_of(d)->shard; }
const Shard& dst_shard(const PlanContext& ctx, DeviceId d) { return ctx.dst_of(d)->shard; }
bool unchanged(const PlanContext& ctx, DeviceId d) { return src_shard(ctx, d) == dst_shard(ctx, d); }
bool contains(const Devices& devices, DeviceId d) { return std::find(devices.begin(), devices.end(), d) != devices.end(); }

Box empty_box_at(const Box& where) { return Box{where.offset, Shape(where.size.size(), 0)}; }

// The changed devices of `subset` grouped by layer (the same values: the logical tensor, or
// one part of one scope); nullopt when one of them changes layer. Unchanged ones are copied.
std::optional<std::vector<Devices>> layers_of_changed(const PlanContext& ctx, const Devices& subset, Built& out) {
  std::vector<Devices> layers;
  for (DeviceId d : subset) {
    if (unchanged(ctx, d)) {
      out.ops.push_back(CopyOp{d, dst_shard(ctx, d).box});
      continue;
    }
    if (!src_shard(ctx, d).same_layer(dst_shard(ctx, d))) return std::nullopt;
    auto same = [&](const Devices& layer) { return src_shard(ctx, layer[0]).same_layer(src_shard(ctx, d)); };
    auto it = std::find_if(layers.begin(), layers.end(), same);
    if (it == layers.end()) layers.push_back({d});
    else it->push_back(d);
  }
  return layers;
}

// One reduction group per round: one device per part of the scope.
std::optional<CommOp> reduction_op(const PlanContext& ctx, const Devices& group, const Box& cell, Built& out) {
  std::vector<Box> pieces;
  for (DeviceId g : group) pieces.push_back(intersect(dst_shard(ctx, g).box, cell));
  if (std::all_of(pieces.begin(), pieces.end(), [&](const Box& p) { return p == cell; })) {
    ++out.all_reduces;
    return AllReduceOp{group, cell};
  }
  if (!tiles(pieces, cell)) return std::nullopt;
  ++out.reduce_scatters;
  return ReduceScatterOp{group, cell, pieces};
}

std::optional<Built> build_reduction(const PlanContext& ctx, const Devices& subset) {
  Built out;
  std::vector<int64_t> scopes;
  for (DeviceId d : subset) {
    const Shard& src = src_shard(ctx, d);
    const Shard& dst = dst_shard(ctx, d);
    if (src == dst) {
      out.ops.push_back(CopyOp{d, dst.box});
      continue;
    }
    if (!src.is_partial() || dst.is_partial() || !src.box.contains(dst.box)) return std::nullopt;
    if (std::find(scopes.begin(), scopes.end(), src.partial_scope) == scopes.end()) scopes.push_back(src.partial_scope);
  }
  for (int64_t scope : scopes) {
    Devices members;  // every holder of a part of this scope must be in the subset and reduce
    std::vector<Box> boxes;
    for (const DeviceShard& s : ctx.src_shards) {
      if (!s.shard.is_partial() || s.shard.partial_scope != scope) continue;
      if (!contains(subset, s.device) || unchanged(ctx, s.device)) return std::nullopt;
      members.push_back(s.device);
      boxes.push_back(s.shard.box);
    }
    const int64_t parts = src_shard(ctx, members[0]).partial_count;
    for (const Box& cell : refine(boxes)) {
      std::vector<Devices> lists(static_cast<size_t>(parts));
      size_t rounds = 1;
      for (int64_t p = 0; p < parts; ++p) {
        Devices holders, receivers;
        for (DeviceId d : members)
          if (src_shard(ctx, d).partial_index == p && src_shard(ctx, d).box.contains(cell)) holders.push_back(d);
        if (holders.empty()) return std::nullopt;
        for (DeviceId h : holders)
          if (overlaps(dst_shard(ctx, h).box, cell)) receivers.push_back(h);
        lists[static_cast<size_t>(p)] = receivers.empty() ? Devices{holders[0]} : receivers;
        rounds = std::max(rounds, lists[static_cast<size_t>(p)].size());
      }
      for (size_t k = 0; k < rounds; ++k) {
        Devices group;
        for (const Devices& list : lists) group.push_back(list[k % list.size()]);
        std::optional<CommOp> op = reduction_op(ctx, group, cell, out);
        if (!op) return std::nullopt;
        out.ops.push_back(std::move(*op));
      }
    }
  }
  return out;
}

// The gather groups of one destination block `cell` among the layer's receivers.
bool gather_cell(const PlanContext& ctx, const Devices& layer, const Box& cell, Built& out) {
  std::vector<Box> pieces;
  std::vector<Devices> holders;
  Devices empty_handed;
  for (DeviceId r : layer) {
    if (!dst_shard(ctx, r).box.contains(cell)) continue;
    const Box piece = intersect(src_shard(ctx, r).box, cell);
    if (piece.empty()) {
      empty_handed.push_back(r);
      continue;
    }
    auto it = std::find(pieces.begin(), pieces.end(), piece);
    if (it == pieces.end()) {
      pieces.push_back(piece);
      holders.push_back({r});
    } else {
      holders[static_cast<size_t>(it - pieces.begin())].push_back(r);
    }
  }
  if (!tiles(pieces, cell)) return false;
  size_t rounds = 1;
  for (const Devices& h : holders) rounds = std::max(rounds, h.size());
  std::vector<AllGatherOp> groups(rounds);
  for (size_t k = 0; k < rounds; ++k)
    for (size_t i = 0; i < pieces.size(); ++i) {
      groups[k].devices.push_back(holders[i][k % holders[i].size()]);
      groups[k].boxes.push_back(pieces[i]);
    }
  for (size_t j = 0; j < empty_handed.size(); ++j) {
    groups[j % rounds].devices.push_back(empty_handed[j]);
    groups[j % rounds].boxes.push_back(empty_box_at(cell));
  }
  for (AllGatherOp& g : groups) {
    if (g.devices.size() == 1) {
      out.ops.push_back(CopyOp{g.devices[0], cell});
    } else {
      ++out.collectives;
      out.ops.push_back(std::move(g));
    }
  }
  return true;
}

std::optional<Built> build_gather(const PlanContext& ctx, const Devices& subset) {
  Built out;
  std::optional<std::vector<Devices>> layers = layers_of_changed(ctx, subset, out);
  if (!layers) return std::nullopt;
  for (const Devices& layer : *layers) {
    std::vector<Box> dst_boxes;
    for (DeviceId r : layer) dst_boxes.push_back(dst_shard(ctx, r).box);
    for (const Box& cell : refine(dst_boxes))
      if (!gather_cell(ctx, layer, cell, out)) return std::nullopt;
  }
  return out;
}

// One exchange group: every member's destination box is covered by the members' sources.
std::optional<CommOp> all_to_all_op(const PlanContext& ctx, const Devices& group) {
  AllToAllOp op{group, {}};
  for (size_t i = 0; i < group.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (overlaps(src_shard(ctx, group[i]).box, src_shard(ctx, group[j]).box)) return std::nullopt;
  for (DeviceId to : group) {
    int64_t covered = 0;
    for (DeviceId from : group) covered += intersect(src_shard(ctx, from).box, dst_shard(ctx, to).box).numel();
    if (covered != dst_shard(ctx, to).box.numel()) return std::nullopt;
  }
  for (DeviceId from : group) {
    op.blocks.emplace_back();
    for (DeviceId to : group) op.blocks.back().push_back(intersect(src_shard(ctx, from).box, dst_shard(ctx, to).box));
  }
  if (group.size() == 1) return CopyOp{group[0], dst_shard(ctx, group[0]).box};
  return op;
}

std::optional<Built> build_all_to_all(const PlanContext& ctx, const Devices& subset) {
  Built out;
  std::optional<std::vector<Devices>> layers = layers_of_changed(ctx, subset, out);
  if (!layers) return std::nullopt;
  for (const Devices& layer : *layers) {
    std::vector<Box> boxes;
    std::vector<Devices> holders;
    for (DeviceId d : layer) {
      auto it = std::find(boxes.begin(), boxes.end(), src_shard(ctx, d).box);
      if (it == boxes.end()) {
        boxes.push_back(src_shard(ctx, d).box);
        holders.push_back({d});
      } else {
        holders[static_cast<size_t>(it - boxes.begin())].push_back(d);
      }
    }
    for (size_t k = 0; k < holders[0].size(); ++k) {
      Devices group;
      for (const Devices& h : holders) {
        if (h.size() != holders[0].size()) return std::nullopt;
        group.push_back(h[k]);
      }
      std::optional<CommOp> op = all_to_all_op(ctx, group);
      if (!op) return std::nullopt;
      out.collectives += std::holds_alternative<AllToAllOp>(*op) ? 1 : 0;
      out.ops.push_back(std::move(*op));
    }
  }
  return out;
}

// The devices that share a source member and a destination member, in source order.
std::vector<Devices> member_subsets(const PlanContext& ctx) {
  std::vector<std::pair<int64_t, int64_t>> keys;
  std::vector<Devices> subsets;
  for (const DeviceShard& s : ctx.src_shards) {
    const std::pair<int64_t, int64_t> key{s.member, ctx.dst_of(s.device)->member};
    auto it = std::find(keys.begin(), keys.end(), key);
    if (it == keys.end()) {
      keys.push_back(key);
      subsets.push_back({s.device});
    } else {
      subsets[static_cast<size_t>(it - keys.begin())].push_back(s.device);
    }
  }
  return subsets;
}

std::optional<Built> member_wise(const PlanContext& ctx, Builder builder) {
  if (!ctx.same_device_set()) return std::nullopt;
  Built total;
  for (const Devices& subset : member_subsets(ctx)) {
    std::optional<Built> b = builder(ctx, subset);
    if (!b) return std::nullopt;
    for (CommOp& op : b->ops) total.ops.push_back(std::move(op));
    total.all_reduces += b->all_reduces;
    total.reduce_scatters += b->reduce_scatters;
    total.collectives += b->collectives;
  }
  return total;
}

std::optional<Built> across_members(const PlanContext& ctx, Builder builder) {
  if (!ctx.same_device_set()) return std::nullopt;
  return builder(ctx, ctx.src.devices());
}

bool only_all_reduces(const std::optional<Built>& b) { return b && b->all_reduces > 0 && b->reduce_scatters == 0; }
bool only_reduce_scatters(const std::optional<Built>& b) { return b && b->reduce_scatters > 0 && b->all_reduces == 0; }
bool some_collective(const std::optional<Built>& b) { return b && b->collectives > 0; }

}  // namespace

bool all_reduce_applies(const PlanContext& ctx) { return only_all_reduces(member_wise(ctx, build_reduction)); }
Steps all_reduce_build(const PlanContext& ctx) {
  return {ctx.step("all_reduce", member_wise(ctx, build_reduction)->ops)};
}

bool reduce_scatter_applies(const PlanContext& ctx) {
  return only_reduce_scatters(member_wise(ctx, build_reduction));
}
Steps reduce_scatter_build(const PlanContext& ctx) {
  return {ctx.step("reduce_scatter", member_wise(ctx, build_reduction)->ops)};
}

bool all_gather_applies(const PlanContext& ctx) { return some_collective(member_wise(ctx, build_gather)); }
Steps all_gather_build(const PlanContext& ctx) { return {ctx.step("all_gather", member_wise(ctx, build_gather)->ops)}; }

bool all_to_all_applies(const PlanContext& ctx) { return some_collective(member_wise(ctx, build_all_to_all)); }
Steps all_to_all_build(const PlanContext& ctx) {
  return {ctx.step("all_to_all", member_wise(ctx, build_all_to_all)->ops)};
}

bool split_all_reduce_applies(const PlanContext& ctx) {
  return only_all_reduces(across_members(ctx, build_reduction));
}
Steps split_all_reduce_build(const PlanContext& ctx) {
  return {ctx.step("split_all_reduce", across_members(ctx, build_reduction)->ops)};
}

bool split_reduce_scatter_applies(const PlanContext& ctx) {
  return only_reduce_scatters(across_members(ctx, build_reduction));
}
Steps split_reduce_scatter_build(const PlanContext& ctx) {
  return {ctx.step("split_reduce_scatter", across_members(ctx, build_reduction)->ops)};
}

bool split_all_gather_applies(const PlanContext& ctx) { return some_collective(across_members(ctx, build_gather)); }
Steps split_all_gather_build(const PlanContext& ctx) {
  return {ctx.step("split_all_gather", across_members(ctx, build_gather)->ops)};
}

}  // namespace hetu::comm_detail
