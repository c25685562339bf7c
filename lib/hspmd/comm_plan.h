// CommPlan: what the planner (planner.h) hands to an executor. A plan is a list of steps;
// each step is one named transition ("all_gather", "split_all_reduce", ...) made of concrete
// ops with device lists in order and boxes in global coordinates, so an executor never
// re-derives anything from annotations.
//
// Execution model (Note [Executing a CommPlan]):
//  - Before a step every device holds one buffer: its box, row-major. Before the first step
//    that is its source shard; after a step it is the shard listed in `after` (devices
//    missing from `after` drop their buffer).
//  - A step reads the old buffers and writes new ones, zero-initialised, shaped by `after`.
//    Ops overwrite their output boxes, except a SendRecvOp with `accumulate`, whose arrivals
//    add up (partial sums summed on arrival). Parts of a partial buffer no op writes stay 0.
//  - Every device runs its ops in list order, so blocking collectives cannot deadlock even
//    when a device takes part in several (split collectives).
//
// Worked example: plan_comm from Union({{0,1}: S(0)x2, {4}: whole}, partial) to the same
// members with relation replica, shape {8, 6}, is one step "split_all_reduce" with ops
//   all_reduce {0,4} [0:4, 0:6]   and   all_reduce {1,4} [4:8, 0:6]
// device 4 reduces each half of its tensor with the matching TP shard.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "lib/hspmd/geometry.h"

namespace hetu {

// new[box] = old[box] on one device (local slice, identity).
struct CopyOp {
  DeviceId device = 0;
  Box box;
};
// Every device gets the sum over `devices` of old[box].
struct AllReduceOp {
  std::vector<DeviceId> devices;
  Box box;
};
// devices[i] contributes old[boxes[i]]; every device gets every boxes[i] (empty boxes allowed).
struct AllGatherOp {
  std::vector<DeviceId> devices;
  std::vector<Box> boxes;
};
// Every device contributes old[box]; devices[i] gets the sum over devices of boxes[i], and
// `boxes` tile `box` (empty pieces allowed).
struct ReduceScatterOp {
  std::vector<DeviceId> devices;
  Box box;
  std::vector<Box> boxes;
};
// devices[i] sends old[blocks[i][j]] to devices[j] (empty blocks allowed).
struct AllToAllOp {
  std::vector<DeviceId> devices;
  std::vector<std::vector<Box>> blocks;
};
// One transfer of a batched point-to-point exchange; src == dst is a local copy.
struct Transfer {
  DeviceId src = 0;
  DeviceId dst = 0;
  Box box;
  bool operator==(const Transfer&) const = default;
};
struct SendRecvOp {
  std::vector<Transfer> transfers;
  bool accumulate = false;  // arrivals overlap and are summed
};

using CommOp = std::variant<CopyOp, AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp, SendRecvOp>;

std::string op_name(const CommOp& op);   // "copy", "all_reduce", ..., "send_recv"
std::string to_string(const CommOp& op);  // "all_reduce {0,4} [0:4, 0:6]"
// Devices that take part in the op, in its order.
std::vector<DeviceId> op_devices(const CommOp& op);

struct CommStep {
  std::string name;  // the transition that made it
  std::vector<CommOp> ops;
  std::vector<DeviceShard> after;  // every device's shard once the step is done
};

struct CommPlan {
  std::string transition;  // the table entry chosen ("hierarchical" composes two steps)
  Shape global_shape;
  std::vector<CommStep> steps;

  std::vector<std::string> step_names() const;
  std::string to_string() const;  // one line per op, grouped by step
};

// Elements that cross between devices, counting ring algorithms for collectives:
// all_reduce 2(n-1)|box|, all_gather (n-1)·sum|boxes[i]|, reduce_scatter (n-1)|box|,
// all_to_all and send_recv their off-device blocks. The planner's cost for choosing.
int64_t comm_volume(const CommPlan& plan);
int64_t comm_volume(const CommStep& step);

}  // namespace hetu
