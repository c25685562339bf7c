// Geometry: boxes, the common refinement, and the shard each device of a Union holds.
#include "lib/hspmd/geometry.h"

#include <fmt/core.h>

#include <algorithm>

#include "lib/util/error.h"

namespace hetu {

int64_t Box::numel() const { return shape_numel(size); }

bool Box::contains(const Box& inner) const {
  if (inner.empty()) return true;
  if (inner.rank() != rank()) return false;
  for (size_t d = 0; d < size.size(); ++d)
    if (inner.offset[d] < offset[d] || inner.offset[d] + inner.size[d] > offset[d] + size[d]) return false;
  return true;
}

std::string Box::to_string() const {
  std::string out = "[";
  for (size_t d = 0; d < size.size(); ++d)
    out += fmt::format("{}{}:{}", d == 0 ? "" : ", ", offset[d], offset[d] + size[d]);
  return out + "]";
}

Box full_box(const Shape& shape) { return Box{Shape(shape.size(), 0), shape}; }

Box intersect(const Box& a, const Box& b) {
  HT_CHECK(a.rank() == b.rank(), "intersect: boxes {} and {} differ in rank", a.to_string(), b.to_string());
  Box out{Shape(a.size.size()), Shape(a.size.size())};
  for (size_t d = 0; d < a.size.size(); ++d) {
    const int64_t lo = std::max(a.offset[d], b.offset[d]);
    const int64_t hi = std::min(a.offset[d] + a.size[d], b.offset[d] + b.size[d]);
    out.offset[d] = lo;
    out.size[d] = std::max<int64_t>(hi - lo, 0);
  }
  return out;
}

bool overlaps(const Box& a, const Box& b) { return !intersect(a, b).empty(); }

bool tiles(const std::vector<Box>& pieces, const Box& region) {
  int64_t covered = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (pieces[i].empty()) continue;
    if (!region.contains(pieces[i])) return false;
    for (size_t j = 0; j < i; ++j)
      if (overlaps(pieces[i], pieces[j])) return false;
    covered += pieces[i].numel();
  }
  return covered == region.numel();
}

std::vector<Box> refine(const std::vector<Box>& boxes) {
  std::vector<Box> nonempty;
  for (const Box& b : boxes)
    if (!b.empty()) nonempty.push_back(b);
  if (nonempty.empty()) return {};
  const size_t rank = nonempty[0].size.size();
  std::vector<std::vector<int64_t>> cuts(rank);
  for (const Box& b : nonempty) {
    HT_CHECK(b.size.size() == rank, "refine: boxes differ in rank");
    for (size_t d = 0; d < rank; ++d) {
      cuts[d].push_back(b.offset[d]);
      cuts[d].push_back(b.offset[d] + b.size[d]);
    }
  }
  for (auto& c : cuts) {
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
  }
  // Odometer over the intervals of every dim, last dim fastest.
  std::vector<Box> cells;
  std::vector<size_t> at(rank, 0);
  while (true) {
    Box cell{Shape(rank), Shape(rank)};
    for (size_t d = 0; d < rank; ++d) {
      cell.offset[d] = cuts[d][at[d]];
      cell.size[d] = cuts[d][at[d] + 1] - cuts[d][at[d]];
    }
    if (std::any_of(nonempty.begin(), nonempty.end(), [&](const Box& b) { return b.contains(cell); }))
      cells.push_back(cell);
    size_t d = rank;
    while (d > 0 && ++at[d - 1] + 1 == cuts[d - 1].size()) at[--d] = 0;
    if (d == 0) break;
  }
  return cells;
}

Range even_part(int64_t length, int64_t parts, int64_t index) {
  HT_CHECK(parts >= 1 && index >= 0 && index < parts, "even_part: index {} of {} parts", index, parts);
  const int64_t base = length / parts;
  const int64_t extra = length % parts;
  return Range{index * base + std::min(index, extra), base + (index < extra ? 1 : 0)};
}

bool Shard::same_layer(const Shard& other) const {
  return partial_scope == other.partial_scope && partial_index == other.partial_index &&
         partial_count == other.partial_count;
}

std::string Shard::to_string() const {
  if (!is_partial()) return box.to_string();
  return fmt::format("{} part {}/{} of scope {}", box.to_string(), partial_index, partial_count, partial_scope);
}

std::optional<std::string> annotation_error(const Union& annotation, const Shape& shape) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  const UnionRelation& rel = annotation.relation();
  if (rel.kind() == RelationKind::split) {
    if (rel.dim() >= rank) return fmt::format("{}: split dim {} >= rank {}", annotation.to_string(), rel.dim(), rank);
    int64_t total = 0;
    for (int64_t s : rel.sizes()) total += s;
    if (total != shape[static_cast<size_t>(rel.dim())])
      return fmt::format("{}: member sizes add up to {}, dim {} has {}", annotation.to_string(), total, rel.dim(),
                         shape[static_cast<size_t>(rel.dim())]);
  }
  for (int64_t m = 0; m < annotation.size(); ++m) {
    const DistState& state = annotation.member(m).state;
    if (state.min_rank() > rank)
      return fmt::format("{}: member {} splits a dim past rank {}", annotation.to_string(), m, rank);
    const Box region = member_region(annotation, shape, m);
    for (const MeshAxis& axis : state.axes())
      if (axis.kind == AxisKind::split && axis.count > region.size[static_cast<size_t>(axis.dim)])
        return fmt::format("{}: member {} splits length {} of dim {} {} ways", annotation.to_string(), m,
                           region.size[static_cast<size_t>(axis.dim)], axis.dim, axis.count);
  }
  return std::nullopt;
}

void check_annotation(const Union& annotation, const Shape& shape) {
  std::optional<std::string> error = annotation_error(annotation, shape);
  HT_CHECK(!error, "annotation for shape {}: {}", shape_str(shape), *error);
}

Box member_region(const Union& annotation, const Shape& shape, int64_t member) {
  Box region = full_box(shape);
  const UnionRelation& rel = annotation.relation();
  if (rel.kind() != RelationKind::split) return region;
  const size_t dim = static_cast<size_t>(rel.dim());
  HT_CHECK(dim < shape.size(), "{}: split dim {} past rank {}", annotation.to_string(), dim, shape.size());
  for (int64_t m = 0; m < member; ++m) region.offset[dim] += rel.sizes()[static_cast<size_t>(m)];
  region.size[dim] = rel.sizes()[static_cast<size_t>(member)];
  return region;
}

namespace {

Shard member_shard(const Union& annotation, const Shape& shape, int64_t member, int64_t index) {
  const DistState& state = annotation.member(member).state;
  Shard shard{member_region(annotation, shape, member)};
  for (const MeshAxis& axis : state.axes()) {
    if (axis.kind != AxisKind::split) continue;
    const size_t d = static_cast<size_t>(axis.dim);
    const Range part = even_part(shard.box.size[d], axis.count, state.split_index(index, axis.dim));
    shard.box.offset[d] += part.offset;
    shard.box.size[d] = part.size;
  }
  if (annotation.relation().kind() == RelationKind::partial) {
    for (int64_t m = 0; m < annotation.size(); ++m) {
      const int64_t count = annotation.member(m).state.partial_count();
      if (m < member) shard.partial_index += count;
      shard.partial_count += count;
    }
    shard.partial_count -= 1;  // started at 1
    shard.partial_index += state.partial_index(index);
  } else {
    shard.partial_scope = member;
    shard.partial_index = state.partial_index(index);
    shard.partial_count = state.partial_count();
  }
  if (!shard.is_partial()) shard.partial_scope = shard.partial_index = 0;
  return shard;
}

}  // namespace

Shard shard_of(const Union& annotation, const Shape& shape, DeviceId device) {
  std::optional<int64_t> member = annotation.member_of(device);
  HT_CHECK(member, "device {} is not in {}", device, annotation.to_string());
  check_annotation(annotation, shape);
  return member_shard(annotation, shape, *member, *annotation.member(*member).group.index_of(device));
}

std::vector<DeviceShard> shards(const Union& annotation, const Shape& shape) {
  check_annotation(annotation, shape);
  std::vector<DeviceShard> out;
  for (int64_t m = 0; m < annotation.size(); ++m) {
    const DeviceGroup& group = annotation.member(m).group;
    for (int64_t i = 0; i < group.size(); ++i)
      out.push_back(DeviceShard{group.at(i), m, member_shard(annotation, shape, m, i)});
  }
  return out;
}

}  // namespace hetu
