// HSPMD types and geometry: DeviceGroup, DistState coordinates and printing, Union
// validation, and the boxes each device holds (uneven splits, dims other than 0,
// partial scopes), written out by hand from the rules in geometry.h.
#include <catch2/catch.hpp>

#include "lib/hspmd/geometry.h"
#include "lib/util/error.h"
#include "tests/hspmd/hspmd_test_utils.h"

namespace hetu::test {
namespace {

Box box(Shape offset, Shape size) { return Box{std::move(offset), std::move(size)}; }

}  // namespace

TEST_CASE("DeviceGroup keeps order and rejects repeated devices", "[hspmd]") {
  DeviceGroup g({4, 5, 1});
  CHECK(g.size() == 3);
  CHECK(g.at(2) == 1);
  CHECK(g.index_of(5) == 1);
  CHECK_FALSE(g.index_of(0).has_value());
  CHECK(g.to_string() == "{4,5,1}");
  CHECK(DeviceGroup::range(2, 3) == DeviceGroup({2, 3, 4}));
  CHECK_FALSE(DeviceGroup({0, 1}) == DeviceGroup({1, 0}));
  CHECK(same_devices(DeviceGroup({0, 1}), DeviceGroup({1, 0})));
  CHECK_THROWS_AS(DeviceGroup({0, 1, 0}), Error);
  CHECK_THROWS_AS(DeviceGroup({-1}), Error);
}

TEST_CASE("DistState maps device indices with the last axis fastest", "[hspmd]") {
  DistState s = ds({S(0, 2), D(2)});
  CHECK(s.to_string() == "S(0)x2 Dx2");
  CHECK(s.device_count() == 4);
  CHECK(s.split_count(0) == 2);
  CHECK(s.split_count(1) == 1);
  CHECK(s.duplicate_count() == 2);
  CHECK(s.partial_count() == 1);
  for (int64_t i = 0; i < 4; ++i) {
    CHECK(s.split_index(i, 0) == i / 2);
    CHECK(s.duplicate_index(i) == i % 2);
  }
  DistState t = ds({D(2), S(0, 2)});
  CHECK(t.split_index(1, 0) == 1);
  CHECK(t.duplicate_index(1) == 0);
  CHECK(t.axis_peers(1, D(1)) == std::vector<int64_t>{1, 3});
  CHECK(s.axis_peers(1, D(1)) == std::vector<int64_t>{0, 1});

  DistState three = ds({P(2), S(1, 3), D(2)});
  CHECK(three.to_string() == "Px2 S(1)x3 Dx2");
  CHECK(three.device_count() == 12);
  CHECK(three.partial_index(7) == 1);
  CHECK(three.split_index(7, 1) == 0);
  CHECK(three.duplicate_index(7) == 1);
  CHECK(three.min_rank() == 2);
  CHECK(DistState().to_string() == "whole");
  CHECK(ds({S(0, 1), D(1)}) == DistState());  // count-1 axes are dropped
  CHECK_THROWS_AS(ds({S(0, 2), S(0, 2)}), Error);
  CHECK_THROWS_AS(ds({D(0)}), Error);
}

TEST_CASE("Union validates members and prints", "[hspmd]") {
  Union u({member({0, 1}, DistState::split(0, 2)), member({4}, DistState())}, UnionRelation::partial());
  CHECK(u.to_string() == "{0,1}: S(0)x2 | {4}: whole ; partial");
  CHECK(u.devices() == std::vector<DeviceId>{0, 1, 4});
  CHECK(u.member_of(4) == 1);
  CHECK_FALSE(u.member_of(2).has_value());
  CHECK(UnionRelation::split(0, {3, 5}).to_string() == "split(0; 3:5)");
  CHECK_THROWS_AS(Union({member({0, 1}, DistState()), member({4}, DistState())}, UnionRelation::replica()), Error);
  CHECK_THROWS_AS(Union({member({0, 1}, DistState::duplicate(2)), member({1}, DistState())}, UnionRelation::replica()),
                  Error);  // groups overlap
  CHECK_THROWS_AS(Union({member({0}, DistState()), member({1}, DistState())}, UnionRelation::none()), Error);
  CHECK_THROWS_AS(Union({member({0}, DistState()), member({1}, DistState())}, UnionRelation::split(0, {4})), Error);
}

TEST_CASE("even_part gives the first ranks one more", "[hspmd]") {
  const std::vector<std::pair<int64_t, int64_t>> expected = {{0, 2}, {2, 2}, {4, 2}, {6, 1}};
  for (int64_t k = 0; k < 4; ++k) {
    CHECK(even_part(7, 4, k).offset == expected[static_cast<size_t>(k)].first);
    CHECK(even_part(7, 4, k).size == expected[static_cast<size_t>(k)].second);
  }
}

TEST_CASE("geometry of the TP=2 and TP=1 gradient union", "[hspmd]") {
  Union grad({member({0, 1}, DistState::split(0, 2)), member({4}, DistState())}, UnionRelation::partial());
  const Shape shape{8, 6};
  Shard d0 = shard_of(grad, shape, 0), d1 = shard_of(grad, shape, 1), d4 = shard_of(grad, shape, 4);
  CHECK(d0.box == box({0, 0}, {4, 6}));
  CHECK(d1.box == box({4, 0}, {4, 6}));
  CHECK(d4.box == box({0, 0}, {8, 6}));
  CHECK((d0.partial_index == 0 && d0.partial_count == 2 && d0.partial_scope == 0));
  CHECK((d1.partial_index == 0 && d1.partial_count == 2));
  CHECK((d4.partial_index == 1 && d4.partial_count == 2 && d4.partial_scope == 0));
  CHECK(d4.to_string() == "[0:8, 0:6] part 1/2 of scope 0");
  CHECK_THROWS_AS(shard_of(grad, shape, 2), Error);

  Union replica({member({0, 1}, DistState::split(0, 2)), member({4}, DistState())}, UnionRelation::replica());
  CHECK_FALSE(shard_of(replica, shape, 4).is_partial());
  // A replica may be partial on its own: each member is its own scope.
  Union own({member({0, 1}, DistState::partial(2)), member({2, 3}, DistState::partial(2))},
            UnionRelation::replica());
  CHECK(shard_of(own, shape, 3).partial_scope == 1);
  CHECK(shard_of(own, shape, 3).partial_index == 1);
}

TEST_CASE("geometry of uneven member splits and splits inside members", "[hspmd]") {
  // A batch of 8 split 3:5 between TP=2 on {0,1} and TP=1 on {4}; inside the first member
  // the 3 rows split 2 + 1.
  Union batch({member({0, 1}, DistState::split(0, 2)), member({4}, DistState())}, UnionRelation::split(0, {3, 5}));
  const Shape shape{8, 6};
  CHECK(member_region(batch, shape, 1) == box({3, 0}, {5, 6}));
  CHECK(shard_of(batch, shape, 0).box == box({0, 0}, {2, 6}));
  CHECK(shard_of(batch, shape, 1).box == box({2, 0}, {1, 6}));
  CHECK(shard_of(batch, shape, 4).box == box({3, 0}, {5, 6}));
  CHECK(annotation_error(batch, {7, 6}).has_value());           // 3 + 5 != 7
  CHECK(annotation_error(on({0, 1, 2}, DistState::split(1, 3)), {4, 2}).has_value());  // 2 cols, 3 ways
  CHECK(annotation_error(on({0, 1}, DistState::split(2, 2)), {4, 2}).has_value());     // no dim 2
}

TEST_CASE("geometry of splits on dims other than 0", "[hspmd]") {
  // Shape (2, 7, 5): S(2)x2 outer, S(1)x3 inner on 6 devices.
  Union u = on({10, 11, 12, 13, 14, 15}, ds({S(2, 2), S(1, 3)}));
  const Shape shape{2, 7, 5};
  CHECK(shard_of(u, shape, 10).box == box({0, 0, 0}, {2, 3, 3}));
  CHECK(shard_of(u, shape, 12).box == box({0, 5, 0}, {2, 2, 3}));
  CHECK(shard_of(u, shape, 13).box == box({0, 0, 3}, {2, 3, 2}));
  CHECK(shard_of(u, shape, 15).box == box({0, 5, 3}, {2, 2, 2}));
  std::vector<Box> all;
  for (const DeviceShard& s : shards(u, shape)) all.push_back(s.shard.box);
  CHECK(tiles(all, full_box(shape)));
}

TEST_CASE("box helpers: intersect, tiles, refine", "[hspmd]") {
  Box a = box({0, 0}, {4, 6}), b = box({2, 3}, {4, 6});
  CHECK(intersect(a, b) == box({2, 3}, {2, 3}));
  CHECK(intersect(box({0}, {2}), box({2}, {2})).empty());
  CHECK(tiles({box({0}, {3}), box({3}, {5})}, box({0}, {8})));
  CHECK_FALSE(tiles({box({0}, {4}), box({3}, {5})}, box({0}, {8})));
  CHECK_FALSE(tiles({box({0}, {3})}, box({0}, {8})));
  std::vector<Box> cells = refine({box({0, 0}, {4, 6}), box({0, 0}, {8, 3})});
  CHECK(cells == std::vector<Box>{box({0, 0}, {4, 3}), box({0, 3}, {4, 3}), box({4, 0}, {4, 3})});
  CHECK(a.to_string() == "[0:4, 0:6]");
}

}  // namespace hetu::test
