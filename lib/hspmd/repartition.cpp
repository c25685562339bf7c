// The generic repartition, the fallback that handles any pair of annotations (Hetu's
// BatchedISendIRecv): cut the tensor at every source and destination box edge; each
// destination device fetches every cell of its box from one source holding it - itself if
// it can, else a holder picked round robin by its position - and the cells fetched from one
// source are merged back into boxes, one transfer each. A cell no device holds as the
// logical value is fetched part by part from one partial scope and summed on arrival.
// Partial destinations: part q receives the source parts p with p % q_count == q (the
// logical value goes to part 0), so every destination scope still sums to the tensor. A
// partial destination keeps the parts of the source scope with its own id when that scope
// holds the cell (so it agrees with the layer-preserving transitions); the source scope is
// chosen by destination scope alone, so the parts of one sum never mix scopes.
#include <algorithm>

#include "lib/hspmd/transitions.h"
#include "lib/util/error.h"

namespace hetu::comm_detail {
namespace {

using Devices = std::vector<DeviceId>;

Devices value_holders(const PlanContext& ctx, const Box& cell) {
  Devices out;
  for (const DeviceShard& s : ctx.src_shards)
    if (!s.shard.is_partial() && s.shard.box.contains(cell)) out.push_back(s.device);
  return out;
}

Devices part_holders(const PlanContext& ctx, const Box& cell, int64_t scope, int64_t part) {
  Devices out;
  for (const DeviceShard& s : ctx.src_shards)
    if (s.shard.is_partial() && s.shard.partial_scope == scope && s.shard.partial_index == part &&
        s.shard.box.contains(cell))
      out.push_back(s.device);
  return out;
}

int64_t parts_of_scope(const PlanContext& ctx, int64_t scope) {
  for (const DeviceShard& s : ctx.src_shards)
    if (s.shard.is_partial() && s.shard.partial_scope == scope) return s.shard.partial_count;
  return 0;
}

// Partial scopes of the source with every part of `cell` on some device, in id order.
std::vector<int64_t> covering_scopes(const PlanContext& ctx, const Box& cell) {
  std::vector<int64_t> scopes;
  for (const DeviceShard& s : ctx.src_shards) {
    const int64_t scope = s.shard.partial_scope;
    if (!s.shard.is_partial() || std::find(scopes.begin(), scopes.end(), scope) != scopes.end()) continue;
    bool covered = true;
    for (int64_t p = 0; p < s.shard.partial_count && covered; ++p) covered = !part_holders(ctx, cell, scope, p).empty();
    if (covered) scopes.push_back(scope);
  }
  std::sort(scopes.begin(), scopes.end());
  return scopes;
}

DeviceId pick(const Devices& holders, DeviceId dst, size_t position) {
  if (std::find(holders.begin(), holders.end(), dst) != holders.end()) return dst;
  return holders[position % holders.size()];
}

// a := a ∪ b when that is a box (they differ in one dim only and touch there).
bool merge_into(Box& a, const Box& b) {
  int64_t differing = -1;
  for (size_t d = 0; d < a.size.size(); ++d) {
    if (a.offset[d] == b.offset[d] && a.size[d] == b.size[d]) continue;
    if (differing >= 0) return false;
    differing = static_cast<int64_t>(d);
  }
  if (differing < 0) return false;
  const size_t d = static_cast<size_t>(differing);
  if (a.offset[d] + a.size[d] == b.offset[d]) {
    a.size[d] += b.size[d];
    return true;
  }
  if (b.offset[d] + b.size[d] == a.offset[d]) {
    a.offset[d] = b.offset[d];
    a.size[d] += b.size[d];
    return true;
  }
  return false;
}

std::vector<Box> merge_boxes(std::vector<Box> boxes) {
  for (bool merged = true; merged;) {
    merged = false;
    for (size_t i = 0; i < boxes.size() && !merged; ++i)
      for (size_t j = i + 1; j < boxes.size() && !merged; ++j)
        if (merge_into(boxes[i], boxes[j])) {
          boxes.erase(boxes.begin() + static_cast<std::ptrdiff_t>(j));
          merged = true;
        }
  }
  return boxes;
}

struct Fetches {
  std::vector<std::pair<DeviceId, std::vector<Box>>> by_source;  // first-use order
  void add(DeviceId src, const Box& cell) {
    auto it = std::find_if(by_source.begin(), by_source.end(), [&](const auto& e) { return e.first == src; });
    if (it == by_source.end()) by_source.push_back({src, {cell}});
    else it->second.push_back(cell);
  }
};

// The sources of one cell of a destination shard; returns how many arrive.
int64_t fetch_cell(const PlanContext& ctx, const DeviceShard& want, size_t position, const Box& cell,
                   Fetches& fetches) {
  const std::vector<int64_t> scopes = covering_scopes(ctx, cell);
  const int64_t key = want.shard.is_partial() ? want.shard.partial_scope : want.member;
  const bool own = std::find(scopes.begin(), scopes.end(), key) != scopes.end();
  const Devices value = value_holders(ctx, cell);
  if (!value.empty() && !(want.shard.is_partial() && own)) {
    if (want.shard.partial_index != 0) return 0;  // the logical value goes to part 0
    fetches.add(pick(value, want.device, position), cell);
    return 1;
  }
  HT_CHECK(!scopes.empty(), "repartition: no source holds cell {} of {}", cell.to_string(), ctx.src.to_string());
  const int64_t scope = own ? key : scopes[static_cast<size_t>(key) % scopes.size()];
  int64_t arrivals = 0;
  for (int64_t p = 0; p < parts_of_scope(ctx, scope); ++p) {
    if (p % want.shard.partial_count != want.shard.partial_index) continue;
    fetches.add(pick(part_holders(ctx, cell, scope, p), want.device, position), cell);
    ++arrivals;
  }
  return arrivals;
}

}  // namespace

bool repartition_applies(const PlanContext&) { return true; }

Steps repartition_build(const PlanContext& ctx) {
  std::vector<Box> edges;
  for (const DeviceShard& s : ctx.src_shards) edges.push_back(s.shard.box);
  for (const DeviceShard& d : ctx.dst_shards) edges.push_back(d.shard.box);
  const std::vector<Box> cells = refine(edges);

  SendRecvOp op;
  for (size_t position = 0; position < ctx.dst_shards.size(); ++position) {
    const DeviceShard& want = ctx.dst_shards[position];
    Fetches fetches;
    for (const Box& cell : cells) {
      if (!want.shard.box.contains(cell)) continue;
      op.accumulate = fetch_cell(ctx, want, position, cell, fetches) > 1 || op.accumulate;
    }
    for (auto& [src, boxes] : fetches.by_source)
      for (Box& box : merge_boxes(std::move(boxes))) op.transfers.push_back(Transfer{src, want.device, box});
  }
  return {ctx.step("repartition", {std::move(op)})};
}

}  // namespace hetu::comm_detail
