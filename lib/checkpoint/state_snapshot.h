// Per-step state snapshots in node-local memory (hetu launch's recovery source): after every
// step each rank writes every box it holds (its parameters and optimizer state, duplicates
// included, with the step, data position and config) to one partial checkpoint file of its
// own; a relaunched run under any layout reads each box it needs from any surviving file
// that holds it, on any node (snapshot_exchange.h). See Note [State snapshots].
//
//   SnapshotWriter w("/dev/shm/hetu-run1/attempt-1/rank-2", slots);   // slots: local_slots()
//   w.save(snapshot);   // .../rank-2/step-0000042/checkpoint.h5; step 41's kept, older removed
//   std::map<int64_t, std::vector<std::string>> all = list_snapshots("/dev/shm/hetu-run1");
//
// Note [State snapshots]
// A snapshot file is checkpoint.h5 with format_version 3 (kPartialFormatVersion): the Note
// [Sharded checkpoint file] layout, but the boxes of a tensor are only those one rank holds,
// so they need not tile it; nothing reads such a file whole. Writes are atomic: the file goes
// into rank-R/.tmp-step-N and the folder is renamed to step-N; only then is anything older
// than the previous step removed, so a kill at any moment leaves the last complete snapshot
// (and usually the one before). Under ROOT = /dev/shm/hetu-<run id>, each launch attempt
// writes ROOT/attempt-K/rank-R; a reader lists every ROOT/*/rank-*/step-N, and the ranks
// assemble the boxes they need from every node's files (Note [Snapshot exchange]). With
// dp >= 2 every box is on two ranks, so the state of a step survives the loss of any one.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lib/checkpoint/sharded_checkpoint.h"
#include "lib/checkpoint/train_checkpoint_store.h"
#include "lib/runtime/training_io.h"

namespace hetu::checkpoint {

class SnapshotWriter {
 public:
  // `rank_dir`: this rank's folder (created on the first save); `slots`: every tensor it holds.
  SnapshotWriter(std::string rank_dir, std::map<std::string, LocalSlot> slots);
  // Every box of every slot (writer or not) of `s`; see Note [State snapshots]. Returns the step folder.
  std::string save(const runtime::Snapshot& s) const;

 private:
  std::string rank_dir_;
  std::map<std::string, LocalSlot> slots_;
};

// Complete snapshot files under `root` by step: ROOT/*/rank-*/step-N/checkpoint.h5, the
// newest attempt folder first within a step (attempt folders in reverse name order).
std::map<int64_t, std::vector<std::string>> list_snapshots(const std::string& root);

}  // namespace hetu::checkpoint
