// DistState: how one tensor is laid out over one device group, as a mesh of typed axes
// (OneFlow SBP / Hetu DS without magic ints). Each axis is Split(dim), Duplicate or Partial
// with a count; the product of the counts is the group size. `axes()` is ordered outermost
// first: the LAST axis varies fastest over consecutive device indices (mixed radix).
// Splits inside a DistState are even with remainder. See Note [Even split with remainder]
// in geometry.h.
//
// Worked example: DistState({MeshAxis::split(0, 2), MeshAxis::duplicate(2)}) on {0,1,2,3}
// prints "S(0)x2 Dx2"; device index i has split_index(i, 0) == i / 2 and
// duplicate_index(i) == i % 2, so devices 0,1 hold rows [0, n/2) and 2,3 hold the rest.
// With the order swapped, "Dx2 S(0)x2", devices 0,2 hold the first half instead.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hetu {

enum class AxisKind : uint8_t { split, duplicate, partial };

struct MeshAxis {
  AxisKind kind = AxisKind::duplicate;
  int64_t dim = 0;  // the tensor dim; meaningful for split only (0 otherwise)
  int64_t count = 1;

  static MeshAxis split(int64_t dim, int64_t count);
  static MeshAxis duplicate(int64_t count);
  static MeshAxis partial(int64_t count);
  bool same_kind(const MeshAxis& other) const { return kind == other.kind && dim == other.dim; }
  std::string to_string() const;  // "S(1)x4", "Dx2", "Px2"
  bool operator==(const MeshAxis&) const = default;
};

class DistState {
 public:
  DistState() = default;  // one device holding the whole tensor
  // Axes outermost first. Axes with count 1 are dropped; a split dim, duplicate or partial
  // may appear once; counts must be >= 1.
  explicit DistState(std::vector<MeshAxis> axes);
  static DistState whole() { return DistState(); }
  static DistState split(int64_t dim, int64_t count) { return DistState({MeshAxis::split(dim, count)}); }
  static DistState duplicate(int64_t count) { return DistState({MeshAxis::duplicate(count)}); }
  static DistState partial(int64_t count) { return DistState({MeshAxis::partial(count)}); }

  const std::vector<MeshAxis>& axes() const { return axes_; }
  int64_t device_count() const;
  int64_t split_count(int64_t dim) const;  // 1 when dim is not split
  int64_t duplicate_count() const;
  int64_t partial_count() const;
  bool is_partial() const { return partial_count() > 1; }
  // The largest split dim + 1 (0 when nothing is split): the minimum tensor rank.
  int64_t min_rank() const;

  // Coordinates of the device at `index` in its group (0 <= index < device_count()).
  int64_t split_index(int64_t index, int64_t dim) const;
  int64_t duplicate_index(int64_t index) const;
  int64_t partial_index(int64_t index) const;
  // Indices of the devices that differ from `index` only along `axis` (which must be one of
  // axes(), compared by kind and dim), in increasing coordinate order; includes `index`.
  std::vector<int64_t> axis_peers(int64_t index, const MeshAxis& axis) const;

  std::string to_string() const;  // "S(0)x2 Dx2"; "whole" for one device
  bool operator==(const DistState&) const = default;

 private:
  int64_t coordinate(int64_t index, const MeshAxis& axis) const;
  int64_t count_of(const MeshAxis& axis) const;
  int64_t stride_of(size_t position) const;  // product of the counts after `position`

  std::vector<MeshAxis> axes_;
};

}  // namespace hetu
