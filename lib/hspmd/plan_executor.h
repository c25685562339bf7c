// The plan executor: runs this rank's part of a CommPlan (comm_plan.h) on real tensors with a
// Communicator. Same semantics as the reference executor (plan_simulator.h), which the MPI
// tests compare it with: steps in order, each rank runs its ops in list order, new buffers
// start at zero, collectives map to the communicator's collectives over the op's devices,
// send_recv ops become one batched exchange (src == dst is a local copy; `accumulate` adds
// arrivals). Non-contiguous boxes are packed into contiguous buffers and unpacked after.
//
// Worked example (2 ranks, shape {4, 2}):
//   Union src = Union::single(DeviceGroup({0, 1}), DistState::split(0, 2));
//   Union dst = Union::single(DeviceGroup({0, 1}), DistState::duplicate(2));
//   Tensor mine = ...;  // rows [2r, 2r+2) of the global tensor, shape {2, 2}
//   Tensor all = execute(plan_comm(src, dst, {4, 2}), src, mine, comm);  // shape {4, 2}
#pragma once

#include <optional>

#include "lib/core/tensor.h"
#include "lib/hspmd/comm_plan.h"
#include "lib/hspmd/communicator.h"

namespace hetu {

// `local_src` is this rank's shard of `src` (shape = its box), or undefined when the rank
// holds none; `dtype` is the element type of every buffer: local_src's by default, and
// required on a rank that holds no source shard. Returns this rank's shard of the plan's last
// layout, or undefined when it holds none. Every rank named by the plan's ops must call it
// with the same plan. `into` (optional; contiguous, as many elements as this rank's shard of
// the last layout, of `dtype`): the result is written there instead of into a new tensor, and
// `into` (viewed as the shard's box) is returned; a strategy switch moves each tensor straight
// into the next run's without a buffer of its own.
Tensor execute(const CommPlan& plan, const Union& src, const Tensor& local_src, Communicator& comm,
               std::optional<DType> dtype = std::nullopt, const Tensor& into = Tensor());

}  // namespace hetu
