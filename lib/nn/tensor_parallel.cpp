// Parameter layouts over a tensor-parallel group and the partial-sum reduction.
#include "lib/nn/tensor_parallel.h"

#include "lib/autograd/functions.h"
#include "lib/hspmd/redistribute.h"
#include "lib/util/error.h"

namespace hetu::nn {

ParamLayout layout_for(const ShardingRule& rule, const std::string& name, const Shape& shape, int64_t tp) {
  ParamLayout layout{shape, shape, DistState::duplicate(tp)};
  if (rule) {
    if (std::optional<ShardingChoice> choice = rule(name, shape, tp)) {
      if (!choice->view.empty()) layout.view = choice->view;
      layout.state = choice->state;
    }
  }
  HT_CHECK(shape_numel(layout.view) == shape_numel(shape), "sharding: parameter {} of shape {} viewed as {}", name,
           shape_str(shape), shape_str(layout.view));
  HT_CHECK(layout.state.device_count() == tp, "sharding: parameter {} laid out as {} on {} tensor-parallel devices",
           name, layout.state.to_string(), tp);
  const Union annotation = Union::single(DeviceGroup::range(0, tp), layout.state);
  if (std::optional<std::string> error = annotation_error(annotation, layout.view)) {
    HT_USAGE_ERROR("tensor parallelism {}: parameter {} of shape {} cannot be laid out as {}: {}", tp, name,
                   shape_str(layout.view), layout.state.to_string(), *error);
  }
  return layout;
}

TensorParallel::TensorParallel(Communicator* comm, DeviceGroup group, int64_t index, ShardingRule rule)
    : comm_(comm), group_(std::move(group)), index_(index), rule_(std::move(rule)) {
  HT_CHECK(index_ >= 0 && index_ < group_.size(), "tensor parallel: index {} outside group {}", index_,
           group_.to_string());
  HT_CHECK(comm_ != nullptr || group_.size() == 1, "tensor parallel: a group of {} needs a communicator",
           group_.size());
}

Communicator& TensorParallel::comm() const {
  HT_CHECK(comm_ != nullptr, "tensor parallel: no communicator");
  return *comm_;
}

const ParamLayout& TensorParallel::add_param(const std::string& name, const Shape& shape) {
  ParamLayout layout = layout_for(rule_, name, shape, size());
  return layouts_.insert_or_assign(name, std::move(layout)).first->second;
}

const ParamLayout& TensorParallel::layout(const std::string& name) const {
  auto it = layouts_.find(name);
  HT_CHECK(it != layouts_.end(), "tensor parallel: no layout recorded for parameter {}", name);
  return it->second;
}

Box TensorParallel::local_box(const ParamLayout& layout) const {
  return shard_of(Union::single(DeviceGroup::range(0, size()), layout.state), layout.view, index_).box;
}

Tensor TensorParallel::reduce_partial(const Tensor& partial) const {
  if (size() == 1) return partial;
  const Union src = Union::single(group_, DistState::partial(size()));
  const Union dst = Union::single(group_, DistState::duplicate(size()));
  return redistribute(autograd::contiguous(partial), src, dst, partial.shape(), comm());
}

}  // namespace hetu::nn
