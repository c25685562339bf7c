// TensorPlacement geometry: the stored-tensor pieces and local shape of a box of a view
// (GPT-2's fused qkv), the holder that writes each box, and the construction checks, each
// against expectations written out by hand.
#include <catch2/catch.hpp>

#include "lib/hspmd/tensor_placement.h"
#include "lib/util/error.h"

namespace hetu {
namespace {

TEST_CASE("a box of a view maps to one stored box per leading index", "[hspmd]") {
  // c_attn.weight (3C, C) with C = 4, viewed as (3, 4, 4), rank 1 of 2 holds [0:3, 2:4, 0:4].
  const std::vector<StoredPiece> pieces = stored_pieces({12, 4}, {3, 4, 4}, Box{{0, 2, 0}, {3, 2, 4}});
  REQUIRE(pieces.size() == 3);
  for (int64_t k = 0; k < 3; ++k) {
    CHECK(pieces[static_cast<size_t>(k)].box == Box{{4 * k + 2, 0}, {2, 4}});  // rows 2-3 of q, of k, of v
    CHECK(pieces[static_cast<size_t>(k)].offset == 8 * k);
    CHECK(pieces[static_cast<size_t>(k)].count == 8);
  }
  CHECK(local_shape({12, 4}, {3, 4, 4}, Box{{0, 2, 0}, {3, 2, 4}}) == Shape{6, 4});
  // The bias (3C) viewed as (3, C): three runs of 2 elements.
  const std::vector<StoredPiece> bias = stored_pieces({12}, {3, 4}, Box{{0, 2}, {3, 2}});
  REQUIRE(bias.size() == 3);
  CHECK(bias[2].box == Box{{10}, {2}});
  CHECK(bias[2].offset == 4);
  CHECK(local_shape({12}, {3, 4}, Box{{0, 2}, {3, 2}}) == Shape{6});
  // Without a view the box is the piece.
  const std::vector<StoredPiece> plain = stored_pieces({8, 4}, {8, 4}, Box{{4, 0}, {4, 4}});
  REQUIRE(plain.size() == 1);
  CHECK(plain[0].box == Box{{4, 0}, {4, 4}});
  CHECK(local_shape({}, {}, Box{}) == Shape{});
}

TEST_CASE("the first copy of each box writes it", "[hspmd]") {
  // Two replicas, tp 2 (split rows) on {0,1} and tp 1 on {2}: devices 0 and 1 write.
  const Union replicas({{DeviceGroup({0, 1}), DistState::split(0, 2)}, {DeviceGroup({2}), DistState()}},
                       UnionRelation::replica());
  CHECK(first_holder(replicas, 0));
  CHECK(first_holder(replicas, 1));
  CHECK_FALSE(first_holder(replicas, 2));
  CHECK_FALSE(first_holder(replicas, 3));  // not a holder
  // Duplicated over {0,1}: device 0 writes.
  const Union duplicated = Union::single(DeviceGroup({0, 1}), DistState::duplicate(2));
  CHECK(first_holder(duplicated, 0));
  CHECK_FALSE(first_holder(duplicated, 1));
  // Members of a split hold different rows: each member's first copy writes.
  const Union split({{DeviceGroup({0}), DistState()}, {DeviceGroup({1, 2}), DistState::duplicate(2)}},
                    UnionRelation::split(0, {3, 5}));
  CHECK(first_holder(split, 0));
  CHECK(first_holder(split, 1));
  CHECK_FALSE(first_holder(split, 2));
}

TEST_CASE("a placement keeps the state with the parameter and checks its view", "[hspmd]") {
  const Union param = Union::single(DeviceGroup({0, 1}), DistState::split(1, 2));
  const TensorPlacement p = replicated_state_placement("c_attn.weight", {12, 4}, {3, 4, 4}, param);
  CHECK(p.grad == param);
  CHECK(p.state == param);
  CHECK(view_box(p, p.state, 1) == Box{{0, 2, 0}, {3, 2, 4}});
  CHECK_THROWS_WITH(replicated_state_placement("w", {12, 4}, {12, 2, 2}, param),
                    Catch::Contains("w of shape (12, 4) viewed as (12, 2, 2): a view must split the first dim only"));
  CHECK_THROWS_WITH(replicated_state_placement("b", {3}, {3}, Union::single(DeviceGroup({0, 1, 2, 3}),
                                                                             DistState::split(0, 4))),
                    Catch::Contains("b of shape (3,) cannot be laid out as {0,1,2,3}: S(0)x4"));
}

}  // namespace
}  // namespace hetu
