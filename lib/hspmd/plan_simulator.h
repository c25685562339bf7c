// A reference executor for CommPlans over in-memory per-device buffers (std::vector<double>,
// row-major over each device's box), so plans can be checked numerically without MPI.
// It follows Note [Executing a CommPlan] (comm_plan.h) literally and throws on any op that
// reads outside a device's old buffer, writes outside its new one, overwrites an element
// with a different value, or leaves part of a non-partial buffer unwritten.
//
// Worked example (shape {4}, values 1 2 3 4):
//   Union src = Union::single(DeviceGroup({0, 1}), DistState::partial(2));
//   Union dst = Union::single(DeviceGroup({0, 1}), DistState::split(0, 2));
//   DeviceBuffers in = make_buffers(src, {4}, {1, 2, 3, 4}, 7);  // two parts adding up to it
//   DeviceBuffers out = execute(plan_comm(src, dst, {4}), in);   // reduce_scatter
//   out[0].values == {1, 2}, out[1].values == {3, 4}; check_buffers(dst, {4}, {1,2,3,4}, out) == ""
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lib/hspmd/comm_plan.h"

namespace hetu {

struct DeviceBuffer {
  Shard shard;
  std::vector<double> values;  // row-major over shard.box
};
using DeviceBuffers = std::map<DeviceId, DeviceBuffer>;

// Integer-valued pseudo-random numbers in [-8, 8] keyed by (seed, index): sums of them are
// exact in double, so plans that add in different orders still agree bit for bit.
std::vector<double> random_integers(int64_t count, uint64_t seed);

// Every device's source buffer: its box of `global`, or of its part when it is partial.
// Parts 0..n-2 of a scope are integers keyed by (seed, scope, part, element); the last part
// is the rest, so the parts add up to `global` exactly.
DeviceBuffers make_buffers(const Union& annotation, const Shape& shape, const std::vector<double>& global,
                           uint64_t seed);
// Runs every step of the plan.
DeviceBuffers execute(const CommPlan& plan, const DeviceBuffers& buffers);
// make_buffers(src) then execute; checks that the plan ends in dst's shards.
DeviceBuffers simulate(const CommPlan& plan, const Union& src, const Union& dst, const std::vector<double>& global,
                       uint64_t seed = 1);
// "" when `buffers` lay out `global` as `annotation` says (each device its shard; partial
// parts of each scope summing to the value; copies agreeing), else the first problem.
std::string check_buffers(const Union& annotation, const Shape& shape, const std::vector<double>& global,
                          const DeviceBuffers& buffers);

}  // namespace hetu
