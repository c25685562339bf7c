// The checkpoint store of a run under `hetu launch`: the sharded durable store
// (train_checkpoint_store.h) plus this rank's per-step state snapshot in node-local memory
// (state_snapshot.h). Resuming takes the newest step whose every box survives in some
// rank's snapshot files, on any node (a box only another node holds is read there and sent:
// snapshot_exchange.h), the same step on every rank, unless the durable checkpoint is newer;
// otherwise (a box that survives nowhere, e.g. dp = 1) the durable checkpoint.
//
//   RecoveryStore store(out_dir + "/checkpoints", keep, placements, comm, "/dev/shm/hetu-r1/attempt-2");
//   std::optional<runtime::Snapshot> s = store.load_latest();  // collective
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/checkpoint/state_snapshot.h"
#include "lib/checkpoint/train_checkpoint_store.h"

namespace hetu::checkpoint {

class RecoveryStore final : public runtime::CheckpointStore {
 public:
  // `state_dir`: this attempt's snapshot folder on this rank's node; this rank writes
  // state_dir/rank-R and reads every rank folder of every attempt beside it (state_dir's
  // parent), and the other nodes' ranks read theirs.
  RecoveryStore(std::string checkpoint_dir, int64_t keep, const std::vector<TensorPlacement>& placements,
                Communicator& comm, const std::string& state_dir);
  std::string save(const runtime::Snapshot& s) override { return durable_.save(s); }
  std::optional<runtime::Snapshot> load_latest() override;
  runtime::Snapshot load(const std::string& path) override { return durable_.load(path); }
  std::map<std::string, Tensor> load_parameters(const std::string& path) override {
    return durable_.load_parameters(path);
  }
  bool keeps_step_snapshots() const override { return true; }
  void save_step_snapshot(const runtime::Snapshot& s) override { writer_.save(s); }

 private:
  // This rank's tensors of the newest step every rank can assemble from the snapshots of
  // every node (collective), or nullopt when there is none.
  std::optional<runtime::Snapshot> from_snapshots() const;

  ShardedStore durable_;
  CheckpointManager manager_;  // the durable folder, for its latest step
  std::map<std::string, LocalSlot> slots_;
  std::string root_;
  SnapshotWriter writer_;
  Communicator& comm_;
};

}  // namespace hetu::checkpoint
