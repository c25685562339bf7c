// TensorPlacement: where one trained tensor lives in a job, the one description of a
// parameter's layout that gradient sync, AdamW and checkpoints all read. It holds the
// logical shape, the view the annotations apply to, and three annotations over the job's
// devices:
//   param  the compute layout: every holder of the parameter (replicas, stages), each
//          member with its tensor-parallel DistState;
//   grad   what the gradient is summed into: the engine redistributes dual(param) -> grad;
//   state  the optimizer state's layout (AdamW moments); checkpoints write the parameter's
//          and the state's boxes from it. Parameters refresh from it with state -> param.
// Without optimizer-state sharding grad and state equal param; with ZeRO-1
// (zero_state_placement) grad and state are one split over every holder of the parameter.
//
// A view is a reshape of the logical shape that splits its first dim (GPT-2's fused qkv
// (3C, C) viewed as (3, C, C) and split on dim 1, so each rank holds its heads' q, k and v
// rows). A box of the view is then several boxes of the logical (stored) tensor, one per
// combination of the leading view indices:
//
//   stored_pieces({12, 4}, {3, 4, 4}, Box{{0, 2, 0}, {3, 2, 4}})
//     == {[2:4, 0:4] at 0, [6:8, 0:4] at 8, [10:12, 0:4] at 16}   (8 elements each)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/core/shape.h"
#include "lib/hspmd/dist_union.h"
#include "lib/hspmd/geometry.h"

namespace hetu {

struct TensorPlacement {
  std::string name;  // the parameter's name in the whole model
  Shape shape;       // logical shape
  Shape view;        // the shape the annotations apply to (== shape unless a view is used)
  Union param;
  Union grad;
  Union state;
};

// The placement of a parameter whose gradient is summed into, and optimizer state kept in,
// its compute layout (grad = state = param). Throws when the view does not reshape `shape`
// by splitting its first dim, or `param` cannot lay out the view.
TensorPlacement replicated_state_placement(std::string name, Shape shape, Shape view, Union param);

// ZeRO-1: `p` (a replicated_state_placement) with its gradient summed into, and its optimizer
// state (AdamW moments, f32 master weights) kept in, one even split of the view over every
// device that holds the parameter, replicas of different shape included. See Note [ZeRO-1
// state split] in tensor_placement.cpp for the split dim and the device order. A parameter of
// which no two devices hold the same element, or whose split dim is shorter than its holder
// count, keeps grad = state = param.
//   param {0,1}: S(0)x2 | {2}: whole ; replica   on (12, 4): rows 0-5, 6-11 and 0-11
//   state {0,2,1}: S(0)x3                            rows 0-3 on 0, 4-7 on 2, 8-11 on 1
// (each state box inside the device's parameter box: grad -> state reduce-scatters,
// state -> param all-gathers).
TensorPlacement zero_state_placement(TensorPlacement p);

// A piece of a local tensor: `box` of the stored (logical) tensor, holding the `count`
// elements at `offset` of the local tensor's row-major data.
struct StoredPiece {
  Box box;
  int64_t offset = 0;
  int64_t count = 0;
};
// The stored-tensor boxes of a box of the view (see the example above).
std::vector<StoredPiece> stored_pieces(const Shape& shape, const Shape& view, const Box& view_box);

// The local tensor's shape for a box of the view: leading view dims merged back to the rank
// of the logical shape ((3, C/2, C) -> (3C/2, C)).
Shape local_shape(const Shape& shape, const Shape& view, const Box& view_box);

// A device's box of `annotation` (param, grad or state of `p`) on the view; throws when the
// device is not in it.
Box view_box(const TensorPlacement& p, const Union& annotation, DeviceId device);
// True when `device` is the one holder that writes its box of `annotation` to checkpoints
// and counts it in the gradient norm: the first copy in the first member (in every member
// when the members split the tensor).
bool first_holder(const Union& annotation, DeviceId device);

}  // namespace hetu
