// Union: validation, lookup and printing.
#include "lib/hspmd/dist_union.h"

#include <fmt/core.h>

#include "lib/util/error.h"

namespace hetu {

UnionRelation UnionRelation::split(int64_t dim, std::vector<int64_t> sizes) {
  HT_CHECK(dim >= 0, "UnionRelation::split: dim must be >= 0, got {}", dim);
  for (int64_t s : sizes) HT_CHECK(s >= 1, "UnionRelation::split: member sizes must be >= 1, got {}", s);
  return UnionRelation(RelationKind::split, dim, std::move(sizes));
}

std::string UnionRelation::to_string() const {
  switch (kind_) {
    case RelationKind::none:
      return "none";
    case RelationKind::replica:
      return "replica";
    case RelationKind::partial:
      return "partial";
    case RelationKind::split: {
      std::string sizes;
      for (int64_t s : sizes_) sizes += (sizes.empty() ? "" : ":") + std::to_string(s);
      return fmt::format("split({}; {})", dim_, sizes);
    }
  }
  return "?";
}

Union::Union(std::vector<UnionMember> members, UnionRelation relation)
    : members_(std::move(members)), relation_(std::move(relation)) {
  HT_CHECK(!members_.empty(), "Union: needs at least one member");
  HT_CHECK(relation_.kind() != RelationKind::none || members_.size() == 1,
           "Union: relation none allows one member, got {}", members_.size());
  HT_CHECK(relation_.kind() != RelationKind::split || relation_.sizes().size() == members_.size(),
           "Union: {} gives {} sizes for {} members", relation_.to_string(), relation_.sizes().size(),
           members_.size());
  for (size_t i = 0; i < members_.size(); ++i) {
    const UnionMember& m = members_[i];
    HT_CHECK(!m.group.empty(), "Union: member {} has an empty group", i);
    HT_CHECK(m.state.device_count() == m.group.size(), "Union: member {} state {} needs {} devices, group {} has {}",
             i, m.state.to_string(), m.state.device_count(), m.group.to_string(), m.group.size());
    for (size_t j = 0; j < i; ++j)
      HT_CHECK(disjoint(members_[j].group, m.group), "Union: groups {} and {} overlap", members_[j].group.to_string(),
               m.group.to_string());
  }
}

Union Union::single(DeviceGroup group, DistState state) {
  return Union({UnionMember{std::move(group), std::move(state)}}, UnionRelation::none());
}

const UnionMember& Union::member(int64_t index) const {
  HT_CHECK(index >= 0 && index < size(), "Union: member {} out of range ({} members)", index, size());
  return members_[static_cast<size_t>(index)];
}

std::vector<DeviceId> Union::devices() const {
  std::vector<DeviceId> out;
  for (const UnionMember& m : members_) out.insert(out.end(), m.group.devices().begin(), m.group.devices().end());
  return out;
}

std::optional<int64_t> Union::member_of(DeviceId device) const {
  for (size_t i = 0; i < members_.size(); ++i)
    if (members_[i].group.contains(device)) return static_cast<int64_t>(i);
  return std::nullopt;
}

std::string Union::to_string() const {
  std::string out;
  for (const UnionMember& m : members_)
    out += (out.empty() ? "" : " | ") + m.group.to_string() + ": " + m.state.to_string();
  return out + " ; " + relation_.to_string();
}

}  // namespace hetu
