// Recovery from the state snapshots of two rehearsed nodes (lib/io/snapshot_exchange.h,
// RecoveryStore) under mpirun: the ranks split into two "nodes", each with its own snapshot
// root, so a rank sees only its node's files. Before the relaunch, w (4, 12) is held whole
// by the last rank only (node 1) and b (6) by rank 0 only (node 0); after it, w is split by
// columns over every rank and b is whole on every rank, so each node needs boxes only the
// other node holds. Every rank resumes from step 7 (step 8 reached rank 0 only), every value
// equal to the tensor itself cut by the definition (box_test_utils.h), without a durable
// checkpoint; with the only holder of w gone, nothing is assembled.
#include <catch2/catch.hpp>

#include <filesystem>

#include "lib/io/recovery_store.h"
#include "lib/io/state_snapshot.h"
#include "tests/hspmd/mpi/mpi_test_utils.h"
#include "tests/io/box_test_utils.h"

namespace hetu::test {
namespace {

namespace fs = std::filesystem;

Union whole_on(std::vector<DeviceId> devices) {
  return Union({{DeviceGroup(std::move(devices)), DistState::whole()}}, UnionRelation::replica());
}

// The layout the snapshots were written in, and the relaunch's.
std::vector<TensorPlacement> before(int64_t n) {
  return {replicated_state_placement("w", {4, 12}, {4, 12}, whole_on({static_cast<DeviceId>(n - 1)})),
          replicated_state_placement("b", {6}, {6}, whole_on({0}))};
}
std::vector<TensorPlacement> after(int64_t n) {
  const DeviceGroup all = DeviceGroup::range(0, n);
  return {replicated_state_placement("w", {4, 12}, {4, 12},
                                         Union({{all, DistState::split(1, n)}}, UnionRelation::replica())),
          replicated_state_placement("b", {6}, {6}, Union({{all, DistState::duplicate(n)}}, UnionRelation::replica()))};
}

// The logical value of tensor `name` at `step` (distinct per tensor and step).
Tensor logical(const std::string& name, const Shape& shape, int64_t step) {
  return index_tensor(shape, DType::f32, step * 1000 + static_cast<int64_t>(name.size()) * 100);
}

// Rank r's "node": the first half of the ranks, or the second.
int64_t node_of(DeviceId r, int64_t n) { return 2 * r / n; }

// This rank's snapshot of `step` in the layout before, under its node's root.
void save_before(const SharedDir& dir, int64_t step) {
  const DeviceId r = world().rank();
  const int64_t n = world().world_size();
  const std::map<std::string, io::LocalSlot> slots = io::local_slots(before(n), r);
  runtime::Snapshot s{step, {}, {{"data_position", fmt::format("step {}", step)}}};
  for (const auto& [name, slot] : slots) s.tensors[name] = box_of(logical(name, slot.shape, step), slot.box);
  io::SnapshotWriter(dir.str(fmt::format("node-{}/attempt-1/rank-{}", node_of(r, n), r)), slots).save(s);
}

std::optional<runtime::Snapshot> resume(const SharedDir& dir) {
  const DeviceId r = world().rank();
  const int64_t n = world().world_size();
  io::RecoveryStore store(dir.str("checkpoints"), 2, after(n), world(),
                          dir.str(fmt::format("node-{}/attempt-2", node_of(r, n))));
  return store.load_latest();
}

}  // namespace

TEST_CASE("snapshot exchange: a box only the other node holds is read there and sent", "[mpi][io]") {
  SharedDir dir("snapshot_exchange");
  const DeviceId r = world().rank();
  const int64_t n = world().world_size();
  save_before(dir, 6);
  save_before(dir, 7);
  if (r == 0) save_before(dir, 8);  // killed before the other ranks wrote step 8
  world().barrier(world().world());

  const std::optional<runtime::Snapshot> s = resume(dir);
  bool ok = s.has_value() && s->step == 7 && s->metadata.count("data_position") &&
            s->metadata.at("data_position") == "step 7";
  const std::map<std::string, io::LocalSlot> slots = io::local_slots(after(n), r);
  ok = ok && s->tensors.size() == slots.size();
  for (const auto& [name, slot] : slots) {
    if (!ok) break;
    auto it = s->tensors.find(name);
    ok = it != s->tensors.end() && bytes_of(it->second) == box_bytes(logical(name, slot.shape, 7), slot.box);
  }
  CHECK(agree(ok));

  // w survived only on the last rank: without its files no step can be assembled, and there
  // is no durable checkpoint to fall back to.
  world().barrier(world().world());
  if (r == 0) fs::remove_all(dir.path / fmt::format("node-{}/attempt-1/rank-{}", node_of(n - 1, n), n - 1));
  world().barrier(world().world());
  CHECK(agree(!resume(dir).has_value()));
}

}  // namespace hetu::test
