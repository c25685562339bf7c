// Recovery from the state snapshots of two rehearsed nodes (lib/checkpoint/snapshot_exchange.h,
// RecoveryStore) under mpirun: the ranks split into two "nodes", each with its own snapshot
// root, so a rank sees only its node's files. Before the relaunch, w (4, 12) is held whole
// by the last rank only (node 1) and b (6) by rank 0 only (node 0); after it, w is split by
// columns over every rank and b is whole on every rank, so each node needs boxes only the
// other node holds. Every rank resumes, without a durable checkpoint, from the newest step
// all can assemble, every value equal to the tensor itself cut by the definition
// (box_test_utils.h): step 6 when the one copy of w at step 7 is corrupt (a failed read on the
// rank that serves it sends every rank to the step below), step 7 when step 8 reached rank 0
// only; with the only holder of w gone, nothing is assembled.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "lib/checkpoint/recovery_store.h"
#include "lib/checkpoint/state_snapshot.h"
#include "tests/checkpoint/box_test_utils.h"
#include "tests/hspmd/mpi/mpi_test_utils.h"

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
  const std::map<std::string, checkpoint::LocalSlot> slots = checkpoint::local_slots(before(n), r);
  runtime::Snapshot s{step, {}, {{"data_position", fmt::format("step {}", step)}}};
  for (const auto& [name, slot] : slots) s.tensors[name] = box_of(logical(name, slot.shape, step), slot.box);
  checkpoint::SnapshotWriter(dir.str(fmt::format("node-{}/attempt-1/rank-{}", node_of(r, n), r)), slots).save(s);
}

// Flips a byte inside the stored bytes of `value` in `file`; false when they are not found.
bool corrupt(const fs::path& file, const Tensor& value) {
  const std::vector<unsigned char> raw = bytes_of(value);
  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const size_t at = bytes.find(std::string(raw.begin(), raw.end()));
  if (at == std::string::npos) return false;
  bytes[at + raw.size() / 2] = static_cast<char>(bytes[at + raw.size() / 2] ^ 0x01);
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
  return true;
}

// Every tensor of `s` equals its logical value at `step`, cut to this rank's box after the relaunch.
bool restored(const std::optional<runtime::Snapshot>& s, int64_t step) {
  bool ok = s.has_value() && s->step == step && s->metadata.count("data_position") &&
            s->metadata.at("data_position") == fmt::format("step {}", step);
  const std::map<std::string, checkpoint::LocalSlot> slots = checkpoint::local_slots(after(world().world_size()), world().rank());
  ok = ok && s->tensors.size() == slots.size();
  for (const auto& [name, slot] : slots) {
    if (!ok) break;
    auto it = s->tensors.find(name);
    ok = it != s->tensors.end() && bytes_of(it->second) == box_bytes(logical(name, slot.shape, step), slot.box);
  }
  return ok;
}

std::optional<runtime::Snapshot> resume(const SharedDir& dir) {
  const DeviceId r = world().rank();
  const int64_t n = world().world_size();
  checkpoint::RecoveryStore store(dir.str("checkpoints"), 2, after(n), world(),
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
  world().barrier(world().world());

  // A flipped byte in w of the last rank's step 7: the read there fails, and every rank goes
  // on to step 6 together.
  const fs::path last = dir.path / fmt::format("node-{}/attempt-1/rank-{}", node_of(n - 1, n), n - 1);
  bool flipped = true;
  if (r == n - 1) flipped = corrupt(last / "step-0000007" / "checkpoint.h5", logical("w", {4, 12}, 7));
  CHECK(agree(flipped));
  world().barrier(world().world());
  CHECK(agree(restored(resume(dir), 6)));

  // Step 7 written again, and step 8 by rank 0 only (killed before the others wrote it).
  save_before(dir, 7);
  if (r == 0) save_before(dir, 8);
  world().barrier(world().world());
  CHECK(agree(restored(resume(dir), 7)));

  // w survived only on the last rank: without its files no step can be assembled, and there
  // is no durable checkpoint to fall back to.
  world().barrier(world().world());
  if (r == 0) fs::remove_all(last);
  world().barrier(world().world());
  CHECK(agree(!resume(dir).has_value()));
}

}  // namespace hetu::test
