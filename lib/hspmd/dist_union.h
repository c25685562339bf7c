// Union: the heterogeneous layer of an HSPMD annotation. A Union is a list of
// members (a DeviceGroup with its own DistState; groups are disjoint) and a relation saying
// how the members share the logical tensor:
//   none     one member holds it (a plain DistState on a group);
//   replica  every member holds the whole tensor (parameters across dp replicas);
//   split    members hold consecutive slices of one dim with explicit, possibly uneven,
//            sizes (a batch of 8 split 3:5 between two pipelines);
//   partial  members hold partial sums (gradients before the dp reduction).
// Several strategies of one tensor are several TensorPlacements (tensor_placement.h), moved
// between with reshard (reshard.h).
//
// Worked example (hetu_v2_hspmd.md §3.5): a weight on two dp replicas, TP=2 on {0,1} and
// TP=1 on {4}; its gradient before the dp sum is
//   Union({{DeviceGroup({0,1}), DistState::split(0, 2)}, {DeviceGroup({4}), DistState()}},
//         UnionRelation::partial())
// which prints "{0,1}: S(0)x2 | {4}: whole ; partial". Device 0 holds the top half of
// partial sum 0, device 4 the whole of partial sum 1.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/hspmd/device_group.h"
#include "lib/hspmd/dist_state.h"

namespace hetu {

enum class RelationKind : uint8_t { none, replica, split, partial };

class UnionRelation {
 public:
  static UnionRelation none() { return UnionRelation(RelationKind::none, 0, {}); }
  static UnionRelation replica() { return UnionRelation(RelationKind::replica, 0, {}); }
  static UnionRelation partial() { return UnionRelation(RelationKind::partial, 0, {}); }
  // Member m holds `sizes[m]` consecutive entries of `dim`, in member order.
  static UnionRelation split(int64_t dim, std::vector<int64_t> sizes);

  RelationKind kind() const { return kind_; }
  int64_t dim() const { return dim_; }                       // split only
  const std::vector<int64_t>& sizes() const { return sizes_; }  // split only
  std::string to_string() const;  // "none", "replica", "partial", "split(0; 3:5)"
  bool operator==(const UnionRelation&) const = default;

 private:
  UnionRelation(RelationKind kind, int64_t dim, std::vector<int64_t> sizes)
      : kind_(kind), dim_(dim), sizes_(std::move(sizes)) {}
  RelationKind kind_;
  int64_t dim_;
  std::vector<int64_t> sizes_;
};

struct UnionMember {
  DeviceGroup group;
  DistState state;
  bool operator==(const UnionMember&) const = default;
};

class Union {
 public:
  // Throws when groups overlap, a state does not match its group size, `none` has more
  // than one member, or split sizes do not match the member count.
  Union(std::vector<UnionMember> members, UnionRelation relation);
  // A plain DistState on one group.
  static Union single(DeviceGroup group, DistState state);

  const std::vector<UnionMember>& members() const { return members_; }
  const UnionMember& member(int64_t index) const;
  int64_t size() const { return static_cast<int64_t>(members_.size()); }
  const UnionRelation& relation() const { return relation_; }
  // Every device, member by member, each group in its order.
  std::vector<DeviceId> devices() const;
  std::optional<int64_t> member_of(DeviceId device) const;
  std::string to_string() const;  // "{0,1}: S(0)x2 | {4}: whole ; partial"
  bool operator==(const Union&) const = default;

 private:
  std::vector<UnionMember> members_;
  UnionRelation relation_;
};

}  // namespace hetu
