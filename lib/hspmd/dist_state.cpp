// DistState: normalisation, mixed-radix device coordinates, printing.
#include "lib/hspmd/dist_state.h"

#include <fmt/core.h>

#include <algorithm>

#include "lib/util/error.h"

namespace hetu {

MeshAxis MeshAxis::split(int64_t dim, int64_t count) {
  HT_CHECK(dim >= 0, "MeshAxis::split: dim must be >= 0, got {}", dim);
  return {AxisKind::split, dim, count};
}
MeshAxis MeshAxis::duplicate(int64_t count) { return {AxisKind::duplicate, 0, count}; }
MeshAxis MeshAxis::partial(int64_t count) { return {AxisKind::partial, 0, count}; }

std::string MeshAxis::to_string() const {
  switch (kind) {
    case AxisKind::split:
      return fmt::format("S({})x{}", dim, count);
    case AxisKind::duplicate:
      return fmt::format("Dx{}", count);
    case AxisKind::partial:
      return fmt::format("Px{}", count);
  }
  return "?";
}

DistState::DistState(std::vector<MeshAxis> axes) {
  for (const MeshAxis& axis : axes) {
    HT_CHECK(axis.count >= 1, "DistState: axis {} needs a count >= 1", axis.to_string());
    HT_CHECK(axis.kind == AxisKind::split || axis.dim == 0, "DistState: only a split axis has a dim");
    if (axis.count == 1) continue;
    bool repeated = std::any_of(axes_.begin(), axes_.end(), [&](const MeshAxis& a) { return a.same_kind(axis); });
    HT_CHECK(!repeated, "DistState: axis kind of {} appears twice", axis.to_string());
    axes_.push_back(axis);
  }
}

int64_t DistState::device_count() const {
  int64_t n = 1;
  for (const MeshAxis& axis : axes_) n *= axis.count;
  return n;
}

int64_t DistState::count_of(const MeshAxis& axis) const {
  for (const MeshAxis& a : axes_)
    if (a.same_kind(axis)) return a.count;
  return 1;
}

int64_t DistState::split_count(int64_t dim) const { return count_of(MeshAxis::split(dim, 1)); }
int64_t DistState::duplicate_count() const { return count_of(MeshAxis::duplicate(1)); }
int64_t DistState::partial_count() const { return count_of(MeshAxis::partial(1)); }

int64_t DistState::min_rank() const {
  int64_t rank = 0;
  for (const MeshAxis& axis : axes_)
    if (axis.kind == AxisKind::split) rank = std::max(rank, axis.dim + 1);
  return rank;
}

int64_t DistState::stride_of(size_t position) const {
  int64_t stride = 1;
  for (size_t i = position + 1; i < axes_.size(); ++i) stride *= axes_[i].count;
  return stride;
}

int64_t DistState::coordinate(int64_t index, const MeshAxis& axis) const {
  HT_CHECK(index >= 0 && index < device_count(), "DistState {}: device index {} out of range", to_string(), index);
  for (size_t i = 0; i < axes_.size(); ++i)
    if (axes_[i].same_kind(axis)) return (index / stride_of(i)) % axes_[i].count;
  return 0;
}

int64_t DistState::split_index(int64_t index, int64_t dim) const {
  return coordinate(index, MeshAxis::split(dim, 1));
}
int64_t DistState::duplicate_index(int64_t index) const { return coordinate(index, MeshAxis::duplicate(1)); }
int64_t DistState::partial_index(int64_t index) const { return coordinate(index, MeshAxis::partial(1)); }

std::vector<int64_t> DistState::axis_peers(int64_t index, const MeshAxis& axis) const {
  for (size_t i = 0; i < axes_.size(); ++i) {
    if (!axes_[i].same_kind(axis)) continue;
    const int64_t stride = stride_of(i);
    const int64_t first = index - coordinate(index, axis) * stride;
    std::vector<int64_t> peers;
    for (int64_t c = 0; c < axes_[i].count; ++c) peers.push_back(first + c * stride);
    return peers;
  }
  HT_THROW("DistState {}: has no axis {}", to_string(), axis.to_string());
}

std::string DistState::to_string() const {
  if (axes_.empty()) return "whole";
  std::string out;
  for (const MeshAxis& axis : axes_) out += (out.empty() ? "" : " ") + axis.to_string();
  return out;
}

}  // namespace hetu
