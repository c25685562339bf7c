// redistribute: change a tensor's HSPMD annotation on real ranks (plan_comm + execute) and
// differentiate through it. The backward of src -> dst is the dual transition
// dual(dst) -> dual(src), where dual() swaps duplicate <-> partial (per mesh axis and for the
// union relation: replica <-> partial): the gradient of a duplicated value is the sum of its
// copies' gradients, and every part of a partial sum receives the whole gradient. So
// all_gather <-> reduce_scatter, all_reduce of partials <-> all_reduce, local slice <->
// zero-padded partial, p2p forward <-> p2p back, repartition <-> reverse repartition.
//
// Worked example (2 ranks, shape {4}):
//   Union s = Union::single(DeviceGroup({0, 1}), DistState::split(0, 2));
//   Union d = Union::single(DeviceGroup({0, 1}), DistState::duplicate(2));
//   Tensor y = redistribute(x, s, d, {4}, comm);   // all_gather; x requires grad
//   autograd::backward(y, g);                      // x.grad() = rows of g0 + g1: reduce_scatter
//
// Autograd covers a rank that holds both an input requiring grad and an output. A rank that
// holds only one side (a pipeline edge: the sender has no output, the receiver's input is a
// fresh leaf) must run the dual itself with redistribute_backward, in the same order as the
// ranks that run it through autograd::backward.
#pragma once

#include <optional>

#include "lib/core/tensor.h"
#include "lib/hspmd/communicator.h"
#include "lib/hspmd/dist_union.h"
#include "lib/hspmd/plan_cache.h"

namespace hetu {

// The annotation of the gradient of a tensor annotated `annotation`.
Union dual_annotation(const Union& annotation);

// `local` is this rank's shard of src (undefined when it holds none; then `dtype` is needed).
// Returns this rank's shard of dst, or undefined. The communicator must outlive the backward.
// `plans` (optional; then it too must outlive the backward): the plans of the transition and
// its dual come from it instead of the planner on every call (a layer's per-forward reduction).
Tensor redistribute(const Tensor& local, const Union& src, const Union& dst, const Shape& global_shape,
                    Communicator& comm, std::optional<DType> dtype = std::nullopt, PlanCache* plans = nullptr);

// The dual transition alone: `grad_local` is this rank's gradient of the dst shard
// (undefined when it holds none); returns its gradient of the src shard, or undefined.
Tensor redistribute_backward(const Tensor& grad_local, const Union& src, const Union& dst, const Shape& global_shape,
                             Communicator& comm, std::optional<DType> dtype = std::nullopt,
                             PlanCache* plans = nullptr);

}  // namespace hetu
