// Per-rank state snapshots (lib/checkpoint/state_snapshot.h): three ranks hold w (4, 6) as rows
// split over ranks 0 and 1 and whole on rank 2; each writes its own partial file, and a
// reader in another layout (columns; assemble_newest_step on one device, whose files are
// all local) gets every box from whichever survivors hold it,
// compared element by element with the tensor itself (box_bytes). A box no survivor holds
// is reported, not filled; a snapshot keeps its previous step and removes older ones.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>

#include "box_test_utils.h"
#include "lib/checkpoint/checkpoint_file.h"
#include "lib/checkpoint/snapshot_exchange.h"
#include "lib/checkpoint/state_snapshot.h"
#include "lib/util/error.h"

using namespace hetu;
using namespace hetu::checkpoint;
namespace fs = std::filesystem;

namespace {

std::vector<TensorPlacement> placements() {
  const Union param({{DeviceGroup({0, 1}), DistState::split(0, 2)}, {DeviceGroup({2}), DistState::whole()}},
                    UnionRelation::replica());
  return {replicated_state_placement("w", {4, 6}, {4, 6}, param)};
}

// Rank `rank`'s snapshot of step `step` (w = index_tensor + step, moments likewise) under root/attempt-1.
std::string save(const fs::path& root, DeviceId rank, int64_t step) {
  const std::map<std::string, LocalSlot> slots = local_slots(placements(), rank);
  runtime::Snapshot s;
  s.step = step;
  s.metadata = {{"data_position", "epoch=0 batch=3 sequence=0 shards=1 tokens=100"}};
  for (const auto& [name, slot] : slots) {
    s.tensors[name] = test::box_of(test::index_tensor({4, 6}, DType::f32, step), slot.box);
  }
  return SnapshotWriter((root / "attempt-1" / fmt::format("rank-{}", rank)).string(), slots).save(s);
}

std::vector<TensorBox> columns() {
  return {{"w", {4, 6}, DType::f32, Box{{0, 2}, {4, 3}}, Tensor()},
          {"optim.v/w", {4, 6}, DType::f32, Box{{0, 0}, {4, 6}}, Tensor()}};
}

}  // namespace

TEST_CASE("state snapshots: any survivors holding every box restore it in another layout", "[io]") {
  const fs::path root = fs::temp_directory_path() / fmt::format("hetu-test-snapshot-{}", ::getpid());
  fs::remove_all(root);
  for (DeviceId r : {0, 1, 2}) save(root, r, 5);
  const Tensor w = test::index_tensor({4, 6}, DType::f32, 5);
  const std::unique_ptr<Communicator> one = make_local_communicator();
  const std::map<int64_t, std::vector<std::string>> all = list_snapshots(root.string());
  REQUIRE(all.size() == 1);
  REQUIRE(all.at(5).size() == 3);
  auto file_of = [&](int rank) { return (root / "attempt-1" / fmt::format("rank-{}", rank) / "step-0000005" /
                                         kCheckpointFileName).string(); };
  for (const std::vector<int>& survivors : std::vector<std::vector<int>>{{0, 1}, {1, 2}, {0, 2}, {2}}) {
    std::vector<std::string> files;
    for (int r : survivors) files.push_back(file_of(r));
    std::vector<TensorBox> wanted = columns();
    const std::optional<AssembledStep> got = assemble_newest_step(*one, {{5, files}}, wanted);
    REQUIRE(got.has_value());
    CHECK(got->step == 5);
    CHECK(got->metadata.at("data_position") == "epoch=0 batch=3 sequence=0 shards=1 tokens=100");
    CHECK(test::bytes_of(wanted[0].values) == test::box_bytes(w, wanted[0].box));
    CHECK(test::bytes_of(wanted[1].values) == test::box_bytes(w, wanted[1].box));
  }
  // Rank 1 alone holds rows 2-3 only.
  std::vector<TensorBox> wanted = columns();
  CHECK_FALSE(assemble_newest_step(*one, {{5, {file_of(1)}}}, wanted).has_value());
  // Nothing reads a partial file as a checkpoint.
  std::vector<TensorBox> as_checkpoint = columns();
  CHECK_THROWS_AS(read_boxes(file_of(0), as_checkpoint), UsageError);
  // Steps 6 and 7: step 6 stays as the previous one, step 5 goes.
  save(root, 0, 6);
  save(root, 0, 7);
  const std::map<int64_t, std::vector<std::string>> later = list_snapshots(root.string());
  CHECK(later.at(5).size() == 2);  // ranks 1 and 2
  CHECK(later.at(6).size() == 1);
  CHECK(later.at(7).size() == 1);
  CHECK_FALSE(fs::exists(root / "attempt-1" / "rank-0" / "step-0000005"));
  // A later attempt's files come first within a step (attempt-10 after attempt-9 is newer).
  for (const char* attempt : {"attempt-9", "attempt-10"}) {
    const std::map<std::string, LocalSlot> slots = local_slots(placements(), 2);
    runtime::Snapshot s;
    s.step = 7;
    for (const auto& [name, slot] : slots) s.tensors[name] = test::index_tensor({4, 6}, DType::f32, 7);
    SnapshotWriter((root / attempt / "rank-2").string(), slots).save(s);
  }
  const std::vector<std::string> seven = list_snapshots(root.string()).at(7);
  REQUIRE(seven.size() == 3);
  CHECK(seven[0].find("attempt-10") != std::string::npos);
  CHECK(seven[1].find("attempt-9") != std::string::npos);
  fs::remove_all(root);
}
