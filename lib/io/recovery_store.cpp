// RecoveryStore: durable saves through the sharded store, per-step snapshots through
// SnapshotWriter, and the choice of where a relaunched run resumes from.
#include "lib/io/recovery_store.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <limits>

#include "lib/io/checkpoint_file.h"
#include "lib/util/error.h"

namespace hetu::io {

namespace fs = std::filesystem;

namespace {

// The smallest of every rank's `value` (collective).
int64_t min_over_ranks(Communicator& comm, int64_t value) {
  const int64_t n = comm.world_size();
  if (n == 1) return value;
  Tensor all = empty({n}, DType::f64);
  comm.all_gather(full({1}, static_cast<double>(value), DType::f64), all, comm.world());
  const double* v = all.data<double>();
  return static_cast<int64_t>(*std::min_element(v, v + n));
}

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

std::optional<runtime::Snapshot> RecoveryStore::from_snapshots(int64_t step,
                                                               const std::vector<std::string>& files) const {
  std::vector<TensorBox> wanted;
  std::vector<std::pair<std::string, StoredPiece>> where;  // each wanted box's tensor and place in it
  for (const auto& [name, slot] : slots_) {
    for (const StoredPiece& p : slot.pieces()) {
      wanted.push_back({name, slot.shape, DType::f32, p.box, Tensor()});
      where.emplace_back(name, p);
    }
  }
  try {
    const std::vector<std::string> missing = read_snapshot_boxes(files, wanted);
    if (!missing.empty()) {
      spdlog::info("resume: the snapshots of step {} lack {} box(es) this rank needs, e.g. {}", step, missing.size(),
                   missing.front());
      return std::nullopt;
    }
    CheckpointFileReader first(files.front());
    runtime::Snapshot s{first.step(), {}, first.metadata()};
    for (size_t i = 0; i < wanted.size(); ++i) {
      const auto& [name, piece] = where[i];
      Tensor& local = s.tensors[name];
      if (!local.defined()) local = empty(slots_.at(name).local, wanted[i].dtype);
      if (piece.box.empty()) continue;
      local.reshape({local.numel()}).narrow(0, piece.offset, piece.count).view(piece.box.size).copy_from(wanted[i].values);
    }
    return s;
  } catch (const Error& e) {
    spdlog::warn("resume: the snapshots of step {} cannot be read: {}", step, e.message());
    return std::nullopt;
  }
}

// Note [Resume source]: every rank lists the snapshot files it sees (its node's), proposes
// the newest step whose boxes it can all read, and the run takes the smallest proposal; if
// some rank cannot read that step, the search goes on below it. The ranks of a step's
// snapshots may differ (a kill between two ranks' writes leaves step N on some and N - 1 on
// all), so the agreed step is the newest that every rank can assemble. It is used when it is
// at least the durable checkpoint's step, which the run falls back to otherwise.
int64_t RecoveryStore::agreed_step(const std::map<int64_t, std::vector<std::string>>& snapshots,
                                   std::optional<runtime::Snapshot>& mine) const {
  int64_t bound = std::numeric_limits<int64_t>::max();
  while (true) {
    int64_t proposal = -1;
    mine.reset();
    for (auto it = snapshots.rbegin(); it != snapshots.rend() && proposal < 0; ++it) {
      if (it->first > bound) continue;
      mine = from_snapshots(it->first, it->second);
      if (mine) proposal = it->first;
    }
    const int64_t common = min_over_ranks(comm_, proposal);
    if (common < 0) return -1;
    if (common != proposal) {
      auto it = snapshots.find(common);
      mine = it == snapshots.end() ? std::nullopt : from_snapshots(common, it->second);
    }
    if (min_over_ranks(comm_, mine ? 1 : 0) == 1) return common;
    bound = common - 1;
  }
}

std::optional<runtime::Snapshot> RecoveryStore::load_latest() {
  const auto start = std::chrono::steady_clock::now();
  int64_t durable_step = -1;
  try {
    if (std::optional<std::string> latest = manager_.latest()) durable_step = read_info(*latest).step;
  } catch (const Error& e) {  // a damaged latest: load_newest_intact below skips it too
    spdlog::warn("resume: the latest durable checkpoint cannot be read: {}", e.message());
  }
  const std::map<int64_t, std::vector<std::string>> snapshots = list_snapshots(root_);
  std::optional<runtime::Snapshot> mine;
  const int64_t step = agreed_step(snapshots, mine);  // collective on every rank, with or without snapshots
  if (step >= 0 && step >= durable_step) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    spdlog::info("resume: state snapshot of step {} from {} file(s) under {} (durable checkpoint: {}), read in {:.3f} s",
                 step, snapshots.at(step).size(), root_,
                 durable_step >= 0 ? fmt::format("step {}", durable_step) : std::string("none"), seconds);
    return mine;
  }
  if (!snapshots.empty()) {
    spdlog::info("resume: no snapshot step every rank can assemble is newer than the durable checkpoint; loading that");
  }
  return durable_.load_latest();
}

}  // namespace hetu::io
