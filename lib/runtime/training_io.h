// What the Trainer needs from the outside, as interfaces: batches (dataset::DataLoader behind
// it in hetu train) and checkpoint storage (checkpoint::CheckpointManager). lib/runtime sits below
// lib/dataset and lib/checkpoint in the layer order, so the app wires the concrete classes in.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/core/tensor.h"

namespace hetu::runtime {

struct Batch {
  Tensor inputs;   // (B, T) token ids
  Tensor targets;  // (B, T) next tokens (-100: none, e.g. a document's last token)
  // Packed documents (data.packing = "documents"): segment offsets into the B·T tokens, from
  // 0 to B·T with every multiple of T (attention stays within a segment, positions restart
  // at each), and the targets of the whole step's global batch (the loss normalizer).
  // Empty and 0 for windows.
  std::vector<int64_t> cu_seqlens = {};
  int64_t global_targets = 0;
};

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  virtual Batch next() = 0;
  // An opaque position; restoring it makes next() continue exactly from there.
  virtual std::string save_position() const = 0;
  virtual void restore_position(const std::string& position) = 0;
};

// The metadata key of the data position in every Trainer snapshot; a checkpoint without
// it cannot be resumed.
inline constexpr const char* kDataPositionKey = "data_position";

struct Snapshot {
  int64_t step = 0;                             // optimizer steps completed
  std::map<std::string, Tensor> tensors;        // parameters and optimizer state, by name
  std::map<std::string, std::string> metadata;  // data position, config, ...
};

class CheckpointStore {
 public:
  virtual ~CheckpointStore() = default;
  // Writes atomically; returns where it went.
  virtual std::string save(const Snapshot& snapshot) = 0;
  // The newest checkpoint that loads and verifies, or nullopt when there is none; newer
  // broken ones are skipped with a warning (lib/checkpoint/newest_intact_checkpoint.h).
  virtual std::optional<Snapshot> load_latest() = 0;
  // A specific checkpoint (a path the user gave as checkpoint.resume).
  virtual Snapshot load(const std::string& path) = 0;
  // Only the parameters of a checkpoint (checkpoint.init_from: no optimizer state needed).
  virtual std::map<std::string, Tensor> load_parameters(const std::string& path) { return load(path).tensors; }
  // Per-step state kept for recovery (hetu launch; lib/checkpoint/recovery_store.h): when true, the
  // Trainer passes every completed step's snapshot to save_step_snapshot.
  virtual bool keeps_step_snapshots() const { return false; }
  virtual void save_step_snapshot(const Snapshot& /*snapshot*/) {}
};

}  // namespace hetu::runtime
