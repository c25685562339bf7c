// Geometry of an HSPMD annotation: for a Union over a global shape and a device, the box
// (offset and size per dim, global coordinates) the device holds, and whether it holds a
// partial sum. Everything the planner and the simulator do is derived from this.
//
// Worked example: shape {8, 6}, Union({{0,1}: S(0)x2, {4}: whole}, partial):
//   shard_of(u, {8,6}, 0) == {box [0:4, 0:6], partial 0 of 2 in scope 0}
//   shard_of(u, {8,6}, 1) == {box [4:8, 0:6], partial 0 of 2 in scope 0}
//   shard_of(u, {8,6}, 4) == {box [0:8, 0:6], partial 1 of 2 in scope 0}
// and Union({{0,1}: S(0)x2, {4}: whole}, split(0; 3:5)) gives device 0 rows [0:2], device 1
// rows [2:3] (3 rows split 2+1) and device 4 rows [3:8].
//
// Note [Even split with remainder]: inside a DistState, Split(n) cuts a length L into n
// parts whose sizes differ by at most one; the first L % n parts get one more entry
// (L = 7, n = 4: 2, 2, 2, 1). Every part must be non-empty (L >= n). Uneven shares with
// chosen sizes belong at the union level (UnionRelation::split).
//
// Note [Partial scopes]: a partial shard holds part `partial_index` of `partial_count`
// parts whose sum is the logical value; devices with the same `partial_scope` share one such
// decomposition. With relation partial the whole union is one scope (member m's parts are
// numbered after those of members 0..m-1); otherwise each member is its own scope (a replica
// may be partial on its own). Non-partial shards have scope 0, index 0, count 1.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/core/shape.h"
#include "lib/hspmd/dist_union.h"

namespace hetu {

struct Box {
  Shape offset;
  Shape size;

  int64_t rank() const { return static_cast<int64_t>(size.size()); }
  int64_t numel() const;
  bool empty() const { return numel() == 0; }
  bool contains(const Box& inner) const;  // an empty inner box is contained anywhere
  std::string to_string() const;          // "[0:4, 2:6]"
  bool operator==(const Box&) const = default;
};

Box full_box(const Shape& shape);
// The common part; empty (some size 0) when a and b do not overlap.
Box intersect(const Box& a, const Box& b);
bool overlaps(const Box& a, const Box& b);
// True when the non-empty pieces lie inside `region`, are pairwise disjoint and cover it.
bool tiles(const std::vector<Box>& pieces, const Box& region);
// The common refinement of `boxes`: cells cut at every box edge in every dim, keeping the
// cells that lie inside at least one box; row-major order.
std::vector<Box> refine(const std::vector<Box>& boxes);

struct Range {
  int64_t offset = 0;
  int64_t size = 0;
};
// Part `index` of `parts` of a length. See Note [Even split with remainder].
Range even_part(int64_t length, int64_t parts, int64_t index);

struct Shard {
  Box box;
  int64_t partial_scope = 0;  // See Note [Partial scopes]
  int64_t partial_index = 0;
  int64_t partial_count = 1;

  bool is_partial() const { return partial_count > 1; }
  // Same values: both hold the logical value, or the same part of the same scope.
  bool same_layer(const Shard& other) const;
  std::string to_string() const;  // "[0:4, 0:6]", "[0:4, 0:6] part 1/2 of scope 0"
  bool operator==(const Shard&) const = default;
};

struct DeviceShard {
  DeviceId device = 0;
  int64_t member = 0;  // the union member holding it
  Shard shard;
  bool operator==(const DeviceShard&) const = default;
};

// Why the annotation cannot lay out a tensor of this shape (a split dim past the rank,
// member sizes that do not add up, a split count larger than its length), or nullopt.
std::optional<std::string> annotation_error(const Union& annotation, const Shape& shape);
void check_annotation(const Union& annotation, const Shape& shape);  // throws annotation_error

// The part of the global tensor a member lays out: all of it, or its slice for split.
Box member_region(const Union& annotation, const Shape& shape, int64_t member);
// Throws when the device is not in the annotation.
Shard shard_of(const Union& annotation, const Shape& shape, DeviceId device);
// Every device's shard, member by member, in group order.
std::vector<DeviceShard> shards(const Union& annotation, const Shape& shape);

}  // namespace hetu
