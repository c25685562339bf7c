// Tensor parallelism for the nn layers: how this rank's parameters are sharded over its
// pipeline stage's tensor-parallel group, and the communication the layers deduce from it.
//
// A model family's sharding rule (models/<arch>/<arch>_sharding.cpp) maps a parameter's full
// name and logical shape to a ParamLayout: the DistState of the parameter over a group of
// `tp` devices, on a `view` of its logical shape (the same row-major bytes, more dims). The
// view is how a fused weight splits by head: GPT-2's c_attn.weight (3C, C) is viewed as
// (3, C, C) and split on dim 1, so each rank holds the q, k and v rows of its heads.
//
// The layers read the layout of their weight and pick their behaviour (Megatron's
// column/row parallel linear and vocab-parallel embedding, without separate classes):
//   Linear, weight S(0) (output features split)  -> output split on its last dim, no comm;
//   Linear, weight S(1) (input features split)   -> output partial, redistributed P -> D
//                                                   (all_reduce), bias added after;
//   Embedding, weight S(0) (rows split)          -> rows outside this rank's range give 0,
//                                                   partial output redistributed P -> D.
// Gradients follow lib/hspmd/redistribute.h: a duplicated tensor's gradient is partial (each
// copy's contribution), so the gradient of a duplicated parameter is summed over its group
// by the trainer's gradient synchronisation, like the data-parallel sum.
//
//   auto tp = std::make_shared<TensorParallel>(comm, DeviceGroup({2, 3}), 1, gpt2_sharding_rule);
//   nn::ParamInit init{seed, "", tp};   // layers built from `init` hold their rank-1 shards
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "lib/core/tensor.h"
#include "lib/hspmd/communicator.h"
#include "lib/hspmd/dist_state.h"
#include "lib/hspmd/geometry.h"

namespace hetu::nn {

struct ParamLayout {
  Shape shape;      // logical shape of the parameter
  Shape view;       // the shape the state applies to (== shape unless the rule gives a view)
  DistState state;  // over the tensor-parallel group
};

// name, logical shape, tp degree -> view and state; nullopt: duplicated on every tp rank.
struct ShardingChoice {
  Shape view;  // empty: the logical shape
  DistState state;
};
using ShardingRule = std::function<std::optional<ShardingChoice>(const std::string& name, const Shape& shape, int64_t tp)>;

// The layout `rule` gives a parameter on a group of `tp` devices (duplicate when it gives
// none); throws naming the parameter when the layout cannot cut its shape.
ParamLayout layout_for(const ShardingRule& rule, const std::string& name, const Shape& shape, int64_t tp);

class TensorParallel {
 public:
  TensorParallel(Communicator* comm, DeviceGroup group, int64_t index, ShardingRule rule);

  int64_t size() const { return group_.size(); }
  int64_t index() const { return index_; }
  const DeviceGroup& group() const { return group_; }
  Communicator& comm() const;
  const ShardingRule& rule() const { return rule_; }

  // Decides (and records) the layout of a parameter being created.
  const ParamLayout& add_param(const std::string& name, const Shape& shape);
  // The recorded layout; throws naming the parameter when it was never added.
  const ParamLayout& layout(const std::string& name) const;
  const std::map<std::string, ParamLayout>& layouts() const { return layouts_; }
  // This rank's box of a layout, in view coordinates.
  Box local_box(const ParamLayout& layout) const;

  // Sums a partial tensor over the group: P -> D (all_reduce; its gradient is all-reduced too).
  Tensor reduce_partial(const Tensor& partial) const;

 private:
  Communicator* comm_;
  DeviceGroup group_;
  int64_t index_;
  ShardingRule rule_;
  std::map<std::string, ParamLayout> layouts_;
};

}  // namespace hetu::nn
