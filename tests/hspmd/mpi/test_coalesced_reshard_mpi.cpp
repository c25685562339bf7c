// CoalescedReshard on the launched ranks: three tensors resharded together, each element
// (view index) holding its own row-major position (plus 1000 x the tensor's number), so
// every rank's values afterwards are checked against that formula over its box: GPT-2's
// fused qkv weight (12, 4) viewed as (3, 4, 4) from tp 2 on {0,1} beside a whole copy on
// the rest (unlike replicas) to data parallel over every rank; a (12, 6) matrix from rows
// split over the ranks to rows split over them in reverse order; a bias summed over the
// ranks (a partial source: its own plan after the batch). Each is added into a target that
// holds 0.5 already, then written over a target of stale values. The first two move in one
// batched exchange of at most one message per other rank each way.
#include <catch2/catch.hpp>

#include <cmath>

#include "lib/hspmd/coalesced_reshard.h"
#include "tests/hspmd/mpi/mpi_test_utils.h"

namespace hetu::test {
namespace {

// The values of `box` of a tensor of view `view`: element (i0, i1, ...) holds its row-major
// position in the view, plus `base`.
std::vector<double> box_values(const Shape& view, const Box& box, double base) {
  std::vector<double> out;
  std::vector<int64_t> at(box.offset.begin(), box.offset.end());
  if (box.numel() == 0) return out;
  while (true) {
    int64_t position = 0;
    for (size_t d = 0; d < view.size(); ++d) position = position * view[d] + at[d];
    out.push_back(base + static_cast<double>(position));
    size_t d = view.size();
    while (d > 0) {
      --d;
      if (++at[d] < box.offset[d] + box.size[d]) break;
      at[d] = box.offset[d];
      if (d == 0) return out;
    }
  }
}

std::vector<DeviceId> ranks(int64_t n, bool reversed) {
  std::vector<DeviceId> out;
  for (int64_t r = 0; r < n; ++r) out.push_back(static_cast<DeviceId>(reversed ? n - 1 - r : r));
  return out;
}

}  // namespace

TEST_CASE("coalesced reshard moves several tensors in one exchange, a partial one by its own plan", "[mpi]") {
  const int64_t n = world().world_size();
  if (n < 3) return;  // the unlike replicas need a third rank
  Communicator& comm = world();
  const DeviceId r = comm.rank();
  const std::vector<DeviceId> all = ranks(n, false);
  const std::vector<DeviceId> rest(all.begin() + 2, all.end());
  const DistState tp2 = DistState::split(1, 2);
  const Union qkv_from({{DeviceGroup({0, 1}), tp2}, {DeviceGroup(rest), DistState::duplicate(n - 2)}},
                       UnionRelation::replica());
  const Union everyone = Union::single(DeviceGroup(ranks(n, false)), DistState::duplicate(n));
  const Union rows = Union::single(DeviceGroup(ranks(n, false)), DistState::split(0, n));
  const Union rows_reversed = Union::single(DeviceGroup(ranks(n, true)), DistState::split(0, n));
  const Union summed = Union::single(DeviceGroup(ranks(n, false)), DistState::partial(n));
  const std::vector<TensorPlacement> placements = {
      replicated_state_placement("c_attn.weight", {12, 4}, {3, 4, 4}, qkv_from),
      replicated_state_placement("w", {12, 6}, {12, 6}, rows),
      replicated_state_placement("b", {10}, {10}, everyone),
  };
  const std::vector<ReshardItem> items = {
      {&placements[0], qkv_from, everyone}, {&placements[1], rows, rows_reversed}, {&placements[2], summed, everyone}};
  PlanCache plans;
  const CoalescedReshard reshard(items, r, plans);
  std::vector<Tensor> sources;
  for (size_t i = 0; i < items.size(); ++i) {
    const TensorPlacement& p = placements[i];
    const Box box = view_box(p, items[i].from, r);
    // The partial bias: rank r holds (r + 1) / (n (n + 1) / 2) of every value, so they sum to it.
    std::vector<double> values = box_values(p.view, box, 1000.0 * static_cast<double>(i));
    if (i == 2) {
      for (double& v : values) v *= static_cast<double>(2 * (r + 1)) / static_cast<double>(n * (n + 1));
    }
    sources.push_back(tensor_from(values, local_shape(p.shape, p.view, box)).to(DType::f32));
  }
  // add_into: each target holds 0.5 everywhere already, the moved values add to it;
  // write_into: the targets hold stale values (NaN), every element is overwritten.
  bool ok = true;
  for (const bool add : {true, false}) {
    const double stale = add ? 0.5 : NAN;
    std::vector<Tensor> targets;
    for (size_t i = 0; i < items.size(); ++i) {
      const TensorPlacement& p = placements[i];
      targets.push_back(full(local_shape(p.shape, p.view, view_box(p, items[i].to, r)), stale, DType::f32));
    }
    if (add) {
      reshard.add_into(sources, targets, comm, DType::f32);
    } else {
      reshard.write_into(sources, targets, comm, DType::f32);
    }
    for (size_t i = 0; ok && i < items.size(); ++i) {
      const TensorPlacement& p = placements[i];
      const std::vector<double> want = box_values(p.view, view_box(p, items[i].to, r), 1000.0 * static_cast<double>(i));
      const std::vector<double> got = to_vector(targets[i]);
      ok = got.size() == want.size();
      for (size_t k = 0; ok && k < want.size(); ++k) {
        ok = std::abs(got[k] - (add ? 0.5 : 0.0) - want[k]) <= 1e-4 * (1 + std::abs(want[k]));
      }
    }
  }
  CHECK(agree(ok));
  // One batch for the first two, one call of the bias's plan (an all_reduce); at most one
  // message to and one from every other rank in the batch.
  CHECK(agree(reshard.calls() == 2));
  CHECK(agree(reshard.messages() <= 2 * (n - 1) + 1));
  CHECK(agree(reshard.per_item_calls() >= 2));
}

}  // namespace hetu::test
