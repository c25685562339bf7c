// In-memory resharding of a placement's tensor on the launched ranks, through the layouts a
// strategy switch walks: data parallel over every rank -> tp 2 on {0,1} only (the others
// hold nothing) -> two replicas of different shape (tp 2 on {0,1}, whole on the rest) ->
// data parallel again. The tensor is GPT-2's fused qkv weight (12, 4) viewed as (3, 4, 4)
// and split on dim 1; element (row, col) holds 4 row + col, so every rank's values after
// each switch are checked against that formula over its box, written here without the
// library's view geometry. The plan cache plans each pair once. Resharding into a tensor that
// still holds other values (a strategy switch's `into`, on recycled memory) leaves none of
// them: every element is either written or zero.
#include <catch2/catch.hpp>

#include <cmath>

#include "lib/hspmd/reshard.h"
#include "tests/hspmd/mpi/mpi_test_utils.h"

namespace hetu::test {
namespace {

const Shape kShape{12, 4};
const Shape kView{3, 4, 4};

// The values a rank must hold for its box of the view: view index (q, i, c) is logical row
// 4q + i, column c; local data is the box in row-major order.
std::vector<double> expected_values(const Box& box) {
  std::vector<double> out;
  for (int64_t q = box.offset[0]; q < box.offset[0] + box.size[0]; ++q)
    for (int64_t i = box.offset[1]; i < box.offset[1] + box.size[1]; ++i)
      for (int64_t c = box.offset[2]; c < box.offset[2] + box.size[2]; ++c)
        out.push_back(static_cast<double>(4 * (4 * q + i) + c));
  return out;
}

Union data_parallel(int64_t n) {
  std::vector<UnionMember> members;
  for (int64_t r = 0; r < n; ++r) members.push_back({DeviceGroup({static_cast<DeviceId>(r)}), DistState()});
  return n == 1 ? Union::single(DeviceGroup({0}), DistState()) : Union(std::move(members), UnionRelation::replica());
}

}  // namespace

TEST_CASE("reshard walks dp -> tp on a subset -> unlike replicas -> dp", "[mpi]") {
  Communicator& comm = world();
  const int64_t n = comm.world_size();
  const DeviceId r = comm.rank();
  if (n < 3) return;  // the unlike replicas need a third rank
  std::vector<DeviceId> rest;
  for (int64_t d = 2; d < n; ++d) rest.push_back(static_cast<DeviceId>(d));
  const DistState tp2 = DistState::split(1, 2);
  const std::vector<Union> walk = {
      data_parallel(n),
      Union::single(DeviceGroup({0, 1}), tp2),
      Union({{DeviceGroup({0, 1}), tp2}, {DeviceGroup(rest), DistState::duplicate(n - 2)}}, UnionRelation::replica()),
      data_parallel(n),
  };
  const TensorPlacement p = replicated_state_placement("c_attn.weight", kShape, kView, walk[0]);
  PlanCache plans;
  // Rank r starts with the whole tensor (data parallel).
  Tensor local = tensor_from(expected_values(full_box(kView)), kShape).to(DType::f32);
  bool ok = true;
  for (size_t s = 1; s < walk.size(); ++s) {
    local = reshard(local, walk[s - 1], walk[s], p, DType::f32, comm, plans);
    if (walk[s].member_of(r)) {
      const Box box = shard_of(walk[s], kView, r).box;
      ok = ok && local.defined() && to_vector(local) == expected_values(box) &&
           local.shape() == Shape{box.size[0] * box.size[1], box.size[2]};
    } else {
      ok = ok && !local.defined();
    }
  }
  CHECK(agree(ok));
  CHECK(plans.size() == 3);
  plans.get(walk[0], walk[1], kView);  // planned already
  CHECK(plans.size() == 3);
}

TEST_CASE("reshard into a tensor of stale values writes every element, zeros where no op writes", "[mpi]") {
  Communicator& comm = world();
  const DeviceId r = comm.rank();
  if (comm.world_size() < 2) return;
  const Shape shape{4, 2};
  const DeviceGroup pair({0, 1});
  const Union whole = Union::single(pair, DistState::duplicate(2));
  const TensorPlacement p = replicated_state_placement("w", shape, shape, whole);
  const std::vector<double> values = {0, 1, 2, 3, 4, 5, 6, 7};
  PlanCache plans;
  bool ok = true;
  // Rows split: each of ranks 0 and 1 is written its rows (4 r .. 4 r + 3 of the row-major values).
  // Partial: the two pieces sum to the whole; a piece no op writes must be zeros, not the stale NaNs.
  for (const Union& to : {Union::single(pair, DistState::split(0, 2)), Union::single(pair, DistState::partial(2))}) {
    const bool holds = r < 2;
    const Tensor source = holds ? tensor_from(values, shape).to(DType::f32) : Tensor();
    const Tensor into = holds ? full(local_shape(shape, shape, view_box(p, to, r)), NAN, DType::f32) : Tensor();
    const Tensor out = reshard(source, whole, to, p, DType::f32, comm, plans, into);
    if (!holds) {
      ok = ok && !out.defined();
      continue;
    }
    if (to.member(0).state.is_partial()) {
      Tensor sum = out.clone();
      comm.all_reduce(sum, pair);
      ok = ok && to_vector(sum) == values;
    } else {
      ok = ok && to_vector(out) == std::vector<double>(values.begin() + 4 * r, values.begin() + 4 * r + 4);
    }
  }
  CHECK(agree(ok));
}

}  // namespace hetu::test
