// Tensor parallelism for the nn layers: how this rank's parameters are sharded over its
// pipeline stage's tensor-parallel group, and the communication the layers deduce from it.
//
// A model family's sharding rule (lib/models/<arch>/<arch>_sharding.cpp) maps a parameter's full
// name and logical shape to a ShardingChoice: the DistState of the parameter over a group of
// `tp` devices, on a `view` of its logical shape (the same row-major bytes, more dims). The
// view is how a fused weight splits by head: GPT-2's c_attn.weight (3C, C) is viewed as
// (3, C, C) and split on dim 1, so each rank holds the q, k and v rows of its heads. A
// PlacementFn turns it into the parameter's TensorPlacement (lib/hspmd/tensor_placement.h):
// over the whole job for a training run (lib/models/parallel_model.h), over the tp group alone
// otherwise (group_placements). TensorParallel records each parameter's placement as the
// layers create it; that one record is what gradient sync, AdamW and checkpoints read.
//
// The layers read this rank's DistState of their weight and pick their behaviour (Megatron's
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
//   auto tp = std::make_shared<TensorParallel>(comm, DeviceGroup({2, 3}), 1,
//                                              group_placements(gpt2_sharding_rule, DeviceGroup({2, 3})));
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
#include "lib/hspmd/plan_cache.h"
#include "lib/hspmd/tensor_placement.h"

namespace hetu::nn {

// name, logical shape, tp degree -> view and state; nullopt: duplicated on every tp rank.
struct ShardingChoice {
  Shape view;  // empty: the logical shape
  DistState state;
};
using ShardingRule = std::function<std::optional<ShardingChoice>(const std::string& name, const Shape& shape, int64_t tp)>;

// The choice `rule` makes for a parameter on a group of `tp` devices, view filled in (the
// logical shape when the rule gives none; duplicate when it gives no choice); throws naming
// the parameter when the state cannot cut its view.
ShardingChoice sharding_for(const ShardingRule& rule, const std::string& name, const Shape& shape, int64_t tp);

// A parameter's placement, from its name and logical shape.
using PlacementFn = std::function<TensorPlacement(const std::string& name, const Shape& shape)>;
// Placements over `group` alone (the rule's choice for group.size() devices, state with the
// parameter): for code that runs one tensor-parallel group without a job around it.
PlacementFn group_placements(ShardingRule rule, DeviceGroup group);

class TensorParallel {
 public:
  // `placement` must place every parameter on a union with one member containing this
  // rank's device (group.at(index)) whose DistState spans the group.
  TensorParallel(Communicator* comm, DeviceGroup group, int64_t index, PlacementFn placement);

  int64_t size() const { return group_.size(); }
  int64_t index() const { return index_; }
  const DeviceGroup& group() const { return group_; }
  Communicator& comm() const;

  // Decides (and records) the placement of a parameter being created.
  const TensorPlacement& add_param(const std::string& name, const Shape& shape);
  // The recorded placement; throws naming the parameter when it was never added.
  const TensorPlacement& placement(const std::string& name) const;
  // This rank's DistState of a placement's parameter (over the tp group).
  const DistState& local_state(const TensorPlacement& p) const;
  // This rank's box of a placement's parameter, in view coordinates.
  Box local_box(const TensorPlacement& p) const;

  // Sums a partial tensor over the group: P -> D (all_reduce; its gradient is all-reduced too).
  Tensor reduce_partial(const Tensor& partial) const;

 private:
  Communicator* comm_;
  DeviceGroup group_;
  int64_t index_;
  PlacementFn placement_;
  std::map<std::string, TensorPlacement> placements_;
  std::shared_ptr<PlanCache> plans_ = std::make_shared<PlanCache>();  // reduce_partial's plans and their duals
};

}  // namespace hetu::nn
