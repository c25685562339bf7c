// checkpoint::local_slots, the boxes a rank's checkpoint store writes and reads (and `hetu ckpt
// reshard` writes for each device of a job): for every trained tensor of a placement, the
// rank's box of the annotation it follows (the parameter its param annotation, the AdamW
// moments the state annotation), whether the rank writes it, and nothing for tensors whose
// annotation does not name the rank. Expected boxes are written out by hand.
#include <catch2/catch.hpp>

#include "lib/checkpoint/train_checkpoint_store.h"

using namespace hetu;
using namespace hetu::checkpoint;

namespace {

Box rows(int64_t first, int64_t count) { return Box{{first, 0}, {count, 6}}; }

// w (4, 6): rows split over {0, 1} in one replica, whole on {2} in the other.
TensorPlacement hetero_replicas() {
  const Union param({{DeviceGroup({0, 1}), DistState::split(0, 2)}, {DeviceGroup({2}), DistState::whole()}},
                    UnionRelation::replica());
  return replicated_state_placement("w", {4, 6}, {4, 6}, param);
}

TEST_CASE("local_slots: every trained tensor of a placement on each of its devices", "[io]") {
  const std::vector<TensorPlacement> placements{hetero_replicas()};
  for (const char* name : {"w", "optim.m/w", "optim.v/w"}) {
    INFO(name);
    const LocalSlot s0 = local_slots(placements, 0).at(name);
    CHECK(s0.box == rows(0, 2));
    CHECK(s0.local == Shape{2, 6});
    CHECK(s0.writer);
    const LocalSlot s1 = local_slots(placements, 1).at(name);
    CHECK(s1.box == rows(2, 2));
    CHECK(s1.writer);
    const LocalSlot s2 = local_slots(placements, 2).at(name);
    CHECK(s2.box == rows(0, 4));
    CHECK_FALSE(s2.writer);  // the first replica's copy is the one written
  }
  CHECK(local_slots(placements, 0).size() == 3);
  CHECK(local_slots(placements, 3).empty());  // a device of the job that holds no w
}

TEST_CASE("local_slots: the parameter follows its param annotation, AdamW moments the state annotation", "[io]") {
  // Duplicated on {0, 1} for compute, the optimizer state split by rows over the same two.
  TensorPlacement p = replicated_state_placement("w", {4, 6}, {4, 6},
                                                 Union::single(DeviceGroup({0, 1}), DistState::duplicate(2)));
  p.state = Union::single(DeviceGroup({0, 1}), DistState::split(0, 2));
  const std::map<std::string, LocalSlot> on1 = local_slots({p}, 1);
  CHECK(on1.at("w").box == rows(0, 4));
  CHECK_FALSE(on1.at("w").writer);
  for (const char* moment : {"optim.m/w", "optim.v/w"}) {
    CHECK(on1.at(moment).box == rows(2, 2));
    CHECK(on1.at(moment).writer);
  }
}

TEST_CASE("local_slots: a box of a view is its stored pieces", "[io]") {
  // A fused (12, 4) weight viewed as (3, 4, 4), split on dim 1 over {0, 1}: device 1 holds
  // rows 2-3 of each of the three (4, 4) blocks.
  const TensorPlacement p = replicated_state_placement("qkv", {12, 4}, {3, 4, 4},
                                                       Union::single(DeviceGroup({0, 1}), DistState::split(1, 2)));
  const LocalSlot s = local_slots({p}, 1).at("qkv");
  CHECK(s.local == Shape{6, 4});
  std::vector<Box> boxes;
  for (const StoredPiece& piece : s.pieces()) boxes.push_back(piece.box);
  CHECK(boxes == std::vector<Box>{Box{{2, 0}, {2, 4}}, Box{{6, 0}, {2, 4}}, Box{{10, 0}, {2, 4}}});
}

}  // namespace
