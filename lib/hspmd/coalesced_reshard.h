// CoalescedReshard: many tensors resharded between two annotations each in ONE batched
// point-to-point exchange with one message per pair of ranks, instead of one plan (and its
// collectives or messages) per tensor. Each tensor's move is the planner's generic
// repartition (planner.h: box intersections, each fetched from one holder); every piece
// rank a sends rank b, over all the tensors in order, is packed into one flat buffer, sent
// once and unpacked at b. The data-parallel gradient sum does the same for all_reduce
// (Note [Gradient buckets], lib/runtime/parallel_engine.cpp). Items whose repartition is not
// one plain exchange (a partial source, summed on arrival) run their own plan after the
// batch, in item order. Every rank of any item must call add_into() with the same items.
//
//   CoalescedReshard back({{&placement, lane.param, optimize.param}, ...}, comm.rank(), plans);
//   back.add_into({lane_grad, ...}, {optimize_grad, ...}, comm, DType::f32);  // one exchange
#pragma once

#include <cstdint>
#include <vector>

#include "lib/core/tensor.h"
#include "lib/hspmd/comm_plan.h"
#include "lib/hspmd/communicator.h"
#include "lib/hspmd/plan_cache.h"
#include "lib/hspmd/tensor_placement.h"

namespace hetu {

struct ReshardItem {
  const TensorPlacement* placement = nullptr;  // the logical shape and the view both annotations apply to
  Union from;
  Union to;
};

class CoalescedReshard {
 public:
  // Plans every item (the plans of items that do not coalesce come from `plans`, which must
  // outlive this).
  CoalescedReshard(std::vector<ReshardItem> items, DeviceId rank, PlanCache& plans);

  // sources[i]: this rank's tensor of item i under `from` (its local shape), undefined where it
  // holds none; targets[i]: where this rank's part of item i under `to` is added (contiguous,
  // as many elements as its box), undefined where it holds none. Messages are of `dtype`.
  void add_into(std::vector<Tensor> sources, const std::vector<Tensor>& targets, Communicator& comm,
                DType dtype) const;
  // The same, the targets overwritten (every element of a target box is some source's).
  void write_into(std::vector<Tensor> sources, const std::vector<Tensor>& targets, Communicator& comm,
                  DType dtype) const;

  // This rank's messages to or from other ranks per run (a collective counts one) and its
  // communicator calls.
  int64_t messages() const;
  int64_t calls() const;
  // The same had every item run its own cached plan (what reshard() does), for the log.
  int64_t per_item_messages() const { return per_item_messages_; }
  int64_t per_item_calls() const { return per_item_calls_; }
  size_t size() const { return items_.size(); }

 private:
  // One piece of a coalesced message: `box` (view coordinates) of item `item`.
  struct Piece {
    size_t item = 0;
    Box box;
  };
  struct Peer {
    DeviceId rank = 0;
    std::vector<Piece> pieces;  // in item order, then the plan's transfer order
    int64_t elements = 0;
  };
  void move_into(std::vector<Tensor> sources, const std::vector<Tensor>& targets, Communicator& comm, DType dtype,
                 bool accumulate) const;

  std::vector<ReshardItem> items_;
  std::vector<Box> src_box_, dst_box_;          // this rank's, per item (empty Box: holds none)
  std::vector<bool> holds_src_, holds_dst_;
  std::vector<std::vector<Box>> local_;         // per item, boxes copied within this rank
  std::vector<const CommPlan*> own_plan_;       // per item: null when coalesced
  std::vector<Peer> send_peers_, recv_peers_;   // in rank order
  int64_t own_messages_ = 0, own_calls_ = 0;  // of the items with their own plans
  int64_t per_item_messages_ = 0, per_item_calls_ = 0;
};

}  // namespace hetu
