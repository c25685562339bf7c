// TensorPlacement: construction checks, view pieces and local shapes.
#include "lib/hspmd/tensor_placement.h"

#include <algorithm>
#include <optional>
#include <tuple>

#include "lib/util/error.h"

namespace hetu {
namespace {

// Checks that `view` reshapes `shape` by splitting its first dim only.
void check_view(const std::string& name, const Shape& shape, const Shape& view) {
  if (view == shape) return;
  const size_t rank = shape.size();
  bool ok = rank >= 1 && view.size() > rank && shape_numel(view) == shape_numel(shape);
  const size_t lead = view.size() - rank;  // view dims [0, lead] make up stored dim 0
  for (size_t d = 1; ok && d < rank; ++d) ok = view[lead + d] == shape[d];
  HT_CHECK(ok, "placement: {} of shape {} viewed as {}: a view must split the first dim only", name, shape_str(shape),
           shape_str(view));
}

}  // namespace

TensorPlacement replicated_state_placement(std::string name, Shape shape, Shape view, Union param) {
  check_view(name, shape, view);
  if (std::optional<std::string> error = annotation_error(param, view)) {
    HT_THROW("placement: {} of shape {} cannot be laid out as {}: {}", name, shape_str(view), param.to_string(),
             *error);
  }
  Union grad = param;
  Union state = param;
  return {std::move(name), std::move(shape), std::move(view), std::move(param), std::move(grad), std::move(state)};
}

// Note [ZeRO-1 state split]: the state splits the dim a member's tp layout splits (the
// first found), else the view's longest dim, so that it is cut where the parameter already
// is. The holders are ordered by where their parameter box starts on that dim (a smaller box
// first on a tie, then member order): when the replicas split alike, or one holds the whole
// tensor, each device's state box then lies inside its own parameter box, so the parameter
// refresh (state -> param) needs no data a device does not gather anyway and loading the
// state from the parameter (param -> state) is a local slice. Any order is correct: the
// planner moves whatever the boxes need.
TensorPlacement zero_state_placement(TensorPlacement p) {
  const Union& param = p.param;
  bool duplicated = param.relation().kind() == RelationKind::replica && param.size() > 1;
  for (const UnionMember& m : param.members()) duplicated = duplicated || m.state.duplicate_count() > 1;
  if (!duplicated) return p;
  std::optional<int64_t> dim;
  for (const UnionMember& m : param.members()) {
    for (const MeshAxis& axis : m.state.axes()) {
      if (!dim && axis.kind == AxisKind::split) dim = axis.dim;
    }
  }
  if (!dim) dim = std::max_element(p.view.begin(), p.view.end()) - p.view.begin();
  const std::vector<DeviceId> holders = param.devices();
  const auto count = static_cast<int64_t>(holders.size());
  if (p.view[static_cast<size_t>(*dim)] < count) return p;
  struct Holder {
    int64_t offset, size;
    size_t position;
    DeviceId device;
  };
  std::vector<Holder> order;
  for (size_t i = 0; i < holders.size(); ++i) {
    const Box box = shard_of(param, p.view, holders[i]).box;
    order.push_back({box.offset[static_cast<size_t>(*dim)], box.size[static_cast<size_t>(*dim)], i, holders[i]});
  }
  std::sort(order.begin(), order.end(), [](const Holder& a, const Holder& b) {
    return std::tie(a.offset, a.size, a.position) < std::tie(b.offset, b.size, b.position);
  });
  std::vector<DeviceId> devices;
  for (const Holder& h : order) devices.push_back(h.device);
  p.state = Union::single(DeviceGroup(std::move(devices)), DistState::split(*dim, count));
  p.grad = p.state;
  return p;
}

std::vector<StoredPiece> stored_pieces(const Shape& shape, const Shape& view, const Box& box) {
  if (view == shape) return {StoredPiece{box, 0, box.numel()}};
  check_view("a tensor", shape, view);
  const size_t rank = shape.size();
  const size_t lead = view.size() - rank;
  // Every combination of indices in view dims [0, lead) is one run of box.size[lead] rows.
  std::vector<int64_t> index(lead, 0);
  int64_t inner = 1;  // elements per stored row
  for (size_t d = 1; d < rank; ++d) inner *= box.size[lead + d];
  const int64_t piece = box.size[lead] * inner;
  std::vector<StoredPiece> out;
  int64_t offset = 0;
  while (true) {
    int64_t row = 0;
    for (size_t d = 0; d <= lead; ++d) {
      const int64_t at = d < lead ? box.offset[d] + index[d] : box.offset[d];
      row = row * view[d] + at;
    }
    Box b;
    b.offset.push_back(row);
    b.size.push_back(box.size[lead]);
    for (size_t d = 1; d < rank; ++d) {
      b.offset.push_back(box.offset[lead + d]);
      b.size.push_back(box.size[lead + d]);
    }
    out.push_back({b, offset, piece});
    offset += piece;
    size_t d = lead;
    while (d > 0 && ++index[d - 1] == box.size[d - 1]) index[--d] = 0;
    if (d == 0) break;
  }
  return out;
}

Shape local_shape(const Shape& shape, const Shape& view, const Box& box) {
  const size_t rank = shape.size();
  if (rank == 0) return {};
  const size_t extra = view.size() - rank;
  Shape out;
  int64_t lead = 1;
  for (size_t d = 0; d <= extra; ++d) lead *= box.size[d];
  out.push_back(lead);
  for (size_t d = extra + 1; d < view.size(); ++d) out.push_back(box.size[d]);
  return out;
}

Box view_box(const TensorPlacement& p, const Union& annotation, DeviceId device) {
  return shard_of(annotation, p.view, device).box;
}

bool first_holder(const Union& annotation, DeviceId device) {
  const std::optional<int64_t> member = annotation.member_of(device);
  if (!member) return false;
  // Members of a split hold different slices; otherwise the first member holds everything.
  if (*member != 0 && annotation.relation().kind() != RelationKind::split) return false;
  const UnionMember& m = annotation.member(*member);
  return m.state.duplicate_index(*m.group.index_of(device)) == 0;
}

}  // namespace hetu
