// Resharding one tensor of a placement between two annotations of its view, in memory: the
// step of a strategy switch (parameters from one strategy's param annotation to the next's,
// AdamW moments from state to state) and of a parameter refresh (state -> param). The plan
// comes from the cache (the planner's generic repartition covers every pair).
//
//   // rank r holds `w` as laid out by `old_p.param`; afterwards as `new_p.param`:
//   Tensor moved = reshard(w, old_p.param, new_p.param, new_p, DType::f32, comm, plans);
#pragma once

#include "lib/core/tensor.h"
#include "lib/hspmd/communicator.h"
#include "lib/hspmd/plan_cache.h"
#include "lib/hspmd/tensor_placement.h"

namespace hetu {

// `local`: this rank's tensor under `from` (its local shape, local_shape() of its box of the
// view), undefined when the rank holds none. Returns this rank's tensor under `to` (local
// shape), undefined when it holds none. `p` gives the logical shape and the view both
// annotations apply to; `dtype` is the element type (needed on ranks that hold no source).
// Every rank in either annotation must call it, in the same order across tensors. `into`
// (optional, defined exactly on the ranks in `to`; contiguous, its local shape): the result is
// written there and `into` is returned, with no tensor of its own.
Tensor reshard(const Tensor& local, const Union& from, const Union& to, const TensorPlacement& p, DType dtype,
               Communicator& comm, PlanCache& plans, const Tensor& into = Tensor());

}  // namespace hetu
