// Parameter placements of a tensor-parallel group and the partial-sum reduction.
#include "lib/nn/tensor_parallel.h"

#include "lib/autograd/functions.h"
#include "lib/hspmd/redistribute.h"
#include "lib/util/error.h"

namespace hetu::nn {

ShardingChoice sharding_for(const ShardingRule& rule, const std::string& name, const Shape& shape, int64_t tp) {
  ShardingChoice choice{shape, DistState::duplicate(tp)};
  if (rule) {
    if (std::optional<ShardingChoice> chosen = rule(name, shape, tp)) {
      if (!chosen->view.empty()) choice.view = chosen->view;
      choice.state = chosen->state;
    }
  }
  HT_CHECK(shape_numel(choice.view) == shape_numel(shape), "sharding: parameter {} of shape {} viewed as {}", name,
           shape_str(shape), shape_str(choice.view));
  HT_CHECK(choice.state.device_count() == tp, "sharding: parameter {} laid out as {} on {} tensor-parallel devices",
           name, choice.state.to_string(), tp);
  const Union annotation = Union::single(DeviceGroup::range(0, tp), choice.state);
  if (std::optional<std::string> error = annotation_error(annotation, choice.view)) {
    HT_USAGE_ERROR("tensor parallelism {}: parameter {} of shape {} cannot be laid out as {}: {}", tp, name,
                   shape_str(choice.view), choice.state.to_string(), *error);
  }
  return choice;
}

PlacementFn group_placements(ShardingRule rule, DeviceGroup group) {
  return [rule = std::move(rule), group = std::move(group)](const std::string& name, const Shape& shape) {
    ShardingChoice choice = sharding_for(rule, name, shape, group.size());
    return replicated_state_placement(name, shape, std::move(choice.view), Union::single(group, choice.state));
  };
}

TensorParallel::TensorParallel(Communicator* comm, DeviceGroup group, int64_t index, PlacementFn placement)
    : comm_(comm), group_(std::move(group)), index_(index), placement_(std::move(placement)) {
  HT_CHECK(placement_ != nullptr, "tensor parallel: no placement function");
  HT_CHECK(index_ >= 0 && index_ < group_.size(), "tensor parallel: index {} outside group {}", index_,
           group_.to_string());
  HT_CHECK(comm_ != nullptr || group_.size() == 1, "tensor parallel: a group of {} needs a communicator",
           group_.size());
}

Communicator& TensorParallel::comm() const {
  HT_CHECK(comm_ != nullptr, "tensor parallel: no communicator");
  return *comm_;
}

const TensorPlacement& TensorParallel::add_param(const std::string& name, const Shape& shape) {
  TensorPlacement p = placement_(name, shape);
  const DistState& state = local_state(p);
  HT_CHECK(state.device_count() == size(), "tensor parallel: {} is laid out as {} here, on a group of {}", name,
           state.to_string(), size());
  return placements_.insert_or_assign(name, std::move(p)).first->second;
}

const TensorPlacement& TensorParallel::placement(const std::string& name) const {
  auto it = placements_.find(name);
  HT_CHECK(it != placements_.end(), "tensor parallel: no placement recorded for parameter {}", name);
  return it->second;
}

const DistState& TensorParallel::local_state(const TensorPlacement& p) const {
  const std::optional<int64_t> member = p.param.member_of(group_.at(index_));
  HT_CHECK(member.has_value(), "tensor parallel: device {} does not hold {} ({})", group_.at(index_), p.name,
           p.param.to_string());
  return p.param.member(*member).state;
}

Box TensorParallel::local_box(const TensorPlacement& p) const { return view_box(p, p.param, group_.at(index_)); }

Tensor TensorParallel::reduce_partial(const Tensor& partial) const {
  if (size() == 1) return partial;
  const Union src = Union::single(group_, DistState::partial(size()));
  const Union dst = Union::single(group_, DistState::duplicate(size()));
  return redistribute(autograd::contiguous(partial), src, dst, partial.shape(), comm(), std::nullopt, plans_.get());
}

}  // namespace hetu::nn
