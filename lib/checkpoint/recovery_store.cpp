// RecoveryStore: durable saves through the sharded store, per-step snapshots through
// SnapshotWriter, and the choice of where a relaunched run resumes from.
#include "lib/checkpoint/recovery_store.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "lib/checkpoint/checkpoint_file.h"
#include "lib/checkpoint/snapshot_exchange.h"
#include "lib/util/error.h"

namespace hetu::checkpoint {

namespace fs = std::filesystem;

namespace {

std::string rank_folder(const std::string& state_dir, DeviceId rank) {
  return (fs::path(state_dir) / fmt::format("rank-{}", rank)).string();
}

}  // namespace

RecoveryStore::RecoveryStore(std::string checkpoint_dir, int64_t keep, const std::vector<TensorPlacement>& placements,
                             Communicator& comm, const std::string& state_dir)
    : durable_(checkpoint_dir, keep, placements, comm),
      manager_(checkpoint_dir, keep),
      slots_(local_slots(placements, comm.rank())),
      root_(fs::path(state_dir).parent_path().string()),
      writer_(rank_folder(state_dir, comm.rank()), slots_),
      comm_(comm) {}

std::optional<runtime::Snapshot> RecoveryStore::from_snapshots() const {
  std::vector<TensorBox> wanted;
  std::vector<std::pair<std::string, StoredPiece>> where;  // each wanted box's tensor and place in it
  for (const auto& [name, slot] : slots_) {
    for (const StoredPiece& p : slot.pieces()) {
      wanted.push_back({name, slot.shape, DType::f32, p.box, Tensor()});
      where.emplace_back(name, p);
    }
  }
  const std::optional<AssembledStep> step = assemble_newest_step(comm_, list_snapshots(root_), wanted);
  if (!step) return std::nullopt;
  runtime::Snapshot s{step->step, {}, step->metadata};
  for (size_t i = 0; i < wanted.size(); ++i) {
    const auto& [name, piece] = where[i];
    Tensor& local = s.tensors[name];
    if (!local.defined()) local = empty(slots_.at(name).local, wanted[i].dtype);
    if (piece.box.empty()) continue;
    local.reshape({local.numel()}).narrow(0, piece.offset, piece.count).view(piece.box.size).copy_from(wanted[i].values);
  }
  if (step->cells_received > 0) {
    spdlog::info("resume: {} cell(s) of step {} ({} bytes) came from other ranks' snapshots", step->cells_received,
                 step->step, step->bytes_received);
  }
  return s;
}

std::optional<runtime::Snapshot> RecoveryStore::load_latest() {
  const auto start = std::chrono::steady_clock::now();
  int64_t durable_step = -1;
  try {
    if (std::optional<std::string> latest = manager_.latest()) durable_step = read_info(*latest).step;
  } catch (const Error& e) {  // a damaged latest: load_newest_intact below skips it too
    spdlog::warn("resume: the latest durable checkpoint cannot be read: {}", e.message());
  }
  std::optional<runtime::Snapshot> mine = from_snapshots();  // collective on every rank, with or without snapshots
  if (mine && mine->step >= durable_step) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    spdlog::info("resume: state snapshot of step {} from the snapshots under {} and the other nodes' (durable "
                 "checkpoint: {}), read in {:.3f} s",
                 mine->step, root_, durable_step >= 0 ? fmt::format("step {}", durable_step) : std::string("none"),
                 seconds);
    return mine;
  }
  spdlog::info("resume: no snapshot step every rank can assemble is at least the durable checkpoint's; loading that");
  return durable_.load_latest();
}

}  // namespace hetu::checkpoint
