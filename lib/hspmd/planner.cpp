// The planner: the transition table, the hierarchical composition, and plan_comm().
// See planner.h for the order of preference and transitions.h for the families.
#include "lib/hspmd/planner.h"

#include <algorithm>
#include <array>
#include <optional>

#include "lib/hspmd/transitions.h"
#include "lib/util/error.h"

namespace hetu {
namespace comm_detail {

PlanContext::PlanContext(const Union& src_annotation, const Union& dst_annotation, const Shape& global_shape)
    : src(src_annotation),
      dst(dst_annotation),
      shape(global_shape),
      src_shards(shards(src_annotation, global_shape)),
      dst_shards(shards(dst_annotation, global_shape)) {}

namespace {
const DeviceShard* find_device(const std::vector<DeviceShard>& list, DeviceId device) {
  auto it = std::find_if(list.begin(), list.end(), [&](const DeviceShard& s) { return s.device == device; });
  return it == list.end() ? nullptr : &*it;
}
}  // namespace

const DeviceShard* PlanContext::src_of(DeviceId device) const { return find_device(src_shards, device); }
const DeviceShard* PlanContext::dst_of(DeviceId device) const { return find_device(dst_shards, device); }

bool PlanContext::same_device_set() const {
  return src_shards.size() == dst_shards.size() &&
         std::all_of(dst_shards.begin(), dst_shards.end(), [&](const DeviceShard& d) { return src_of(d.device); });
}

CommStep PlanContext::step(std::string_view name, std::vector<CommOp> ops) const {
  return CommStep{std::string(name), std::move(ops), dst_shards};
}

bool hierarchical_applies(const PlanContext& ctx);
Steps hierarchical_build(const PlanContext& ctx);

namespace {

constexpr std::array<Transition, 12> kTransitions = {{
    {"identity", identity_applies, identity_build},
    {"point_to_point", point_to_point_applies, point_to_point_build},
    {"local_slice", local_slice_applies, local_slice_build},
    {"all_reduce", all_reduce_applies, all_reduce_build},
    {"all_gather", all_gather_applies, all_gather_build},
    {"reduce_scatter", reduce_scatter_applies, reduce_scatter_build},
    {"all_to_all", all_to_all_applies, all_to_all_build},
    {"split_all_reduce", split_all_reduce_applies, split_all_reduce_build},
    {"split_reduce_scatter", split_reduce_scatter_applies, split_reduce_scatter_build},
    {"split_all_gather", split_all_gather_applies, split_all_gather_build},
    {"hierarchical", hierarchical_applies, hierarchical_build},
    {"repartition", repartition_applies, repartition_build},
}};

const Transition& find_transition(std::string_view name) {
  for (const Transition& t : kTransitions)
    if (t.name == name) return t;
  HT_THROW("no transition named '{}'", name);
}

// A step a hierarchical plan may use: a specialised one-step transition, not identity.
bool composable(const Transition& t) {
  return t.name != "identity" && t.name != "hierarchical" && t.name != "repartition";
}

std::optional<Steps> one_specialised_step(const PlanContext& ctx) {
  for (const Transition& t : kTransitions)
    if (composable(t) && t.applies(ctx)) return t.build(ctx);
  return std::nullopt;
}

// Intermediate annotations: the destination's groups and relation with the source's member
// states (the collective across members first), or the source's groups and relation with
// the destination's member states (the collective inside each member first).
std::vector<Union> middles(const PlanContext& ctx) {
  std::vector<Union> out;
  if (ctx.src.size() != ctx.dst.size()) return out;
  auto mix = [&](const Union& groups, const Union& states) -> std::optional<Union> {
    std::vector<UnionMember> members;
    for (int64_t m = 0; m < groups.size(); ++m) {
      if (groups.member(m).group.size() != states.member(m).state.device_count()) return std::nullopt;
      members.push_back(UnionMember{groups.member(m).group, states.member(m).state});
    }
    Union mid(std::move(members), groups.relation());
    if (annotation_error(mid, ctx.shape)) return std::nullopt;
    return mid;
  };
  for (auto mid : {mix(ctx.dst, ctx.src), mix(ctx.src, ctx.dst)})
    if (mid) out.push_back(std::move(*mid));
  return out;
}

// The cheapest two-step composition through one of the middles, by comm_volume.
std::optional<Steps> cheapest_composition(const PlanContext& ctx) {
  std::optional<Steps> best;
  int64_t best_volume = 0;
  for (const Union& mid : middles(ctx)) {
    PlanContext first(ctx.src, mid, ctx.shape);
    PlanContext second(mid, ctx.dst, ctx.shape);
    if (identity_applies(first) || identity_applies(second)) continue;
    std::optional<Steps> a = one_specialised_step(first);
    std::optional<Steps> b = a ? one_specialised_step(second) : std::nullopt;
    if (!b) continue;
    a->insert(a->end(), b->begin(), b->end());
    const int64_t volume = comm_volume(CommPlan{"", ctx.shape, *a});
    if (!best || volume < best_volume) {
      best = std::move(a);
      best_volume = volume;
    }
  }
  return best;
}

}  // namespace

// Only when it moves no more data than the repartition would (collectives win the ties):
// a pipeline edge followed by a reshuffle on the far side is one batched exchange instead.
bool hierarchical_applies(const PlanContext& ctx) {
  std::optional<Steps> steps = cheapest_composition(ctx);
  return steps && comm_volume(CommPlan{"", ctx.shape, *steps}) <=
                      comm_volume(CommPlan{"", ctx.shape, repartition_build(ctx)});
}
Steps hierarchical_build(const PlanContext& ctx) { return *cheapest_composition(ctx); }

}  // namespace comm_detail

std::vector<std::string_view> transition_names() {
  std::vector<std::string_view> names;
  for (const comm_detail::Transition& t : comm_detail::kTransitions) names.push_back(t.name);
  return names;
}

CommPlan plan_comm(const Union& src, const Union& dst, const Shape& global_shape) {
  const comm_detail::PlanContext ctx(src, dst, global_shape);
  for (const comm_detail::Transition& t : comm_detail::kTransitions)
    if (t.applies(ctx)) return CommPlan{std::string(t.name), global_shape, t.build(ctx)};
  HT_THROW("plan_comm: no transition from {} to {}", src.to_string(), dst.to_string());
}

bool transition_applies(std::string_view transition, const Union& src, const Union& dst, const Shape& global_shape) {
  const comm_detail::PlanContext ctx(src, dst, global_shape);
  return comm_detail::find_transition(transition).applies(ctx);
}

CommPlan plan_with(std::string_view transition, const Union& src, const Union& dst, const Shape& global_shape) {
  const comm_detail::PlanContext ctx(src, dst, global_shape);
  const comm_detail::Transition& t = comm_detail::find_transition(transition);
  HT_CHECK(t.applies(ctx), "transition {} does not apply from {} to {} (shape {})", transition, src.to_string(),
           dst.to_string(), shape_str(global_shape));
  return CommPlan{std::string(t.name), global_shape, t.build(ctx)};
}

CommPlan plan_repartition(const Union& src, const Union& dst, const Shape& global_shape) {
  return plan_with("repartition", src, dst, global_shape);
}

}  // namespace hetu
