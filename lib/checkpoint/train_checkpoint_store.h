// The Trainer's checkpoint store (runtime::CheckpointStore) for every layout, one device
// included: each rank writes the boxes it owns of every logical tensor (save_sharded,
// collective) and reads back exactly the boxes its placements need, whatever layout wrote
// them (reshard on load; a file of whole tensors, as single-device runs wrote them before,
// is one box per tensor).
// Which annotation each stored tensor follows is optim::trained_tensors (the parameter its
// param annotation, its optimizer states the state annotation), as in a strategy switch; a
// box of a view is several stored boxes (stored_pieces, lib/hspmd/tensor_placement.h).
// Reading a file is not a CommPlan: every rank reads the stored boxes that overlap its own
// (read_boxes, any writer layout, no communication); see Note [Reshard on load].
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lib/checkpoint/checkpoint.h"
#include "lib/hspmd/communicator.h"
#include "lib/hspmd/tensor_placement.h"
#include "lib/runtime/training_io.h"

namespace hetu::checkpoint {

// Where one stored tensor (a parameter or one of its optimizer states) lives on this rank.
struct LocalSlot {
  Shape shape;       // logical (stored) shape
  Shape view;        // the shape `box` is a box of
  Box box;           // this rank's box of the view
  Shape local;       // the local tensor's shape
  bool writer = true;  // this rank writes the box (one holder per box)
  // The box as boxes of the stored tensor, with where each sits in the local tensor.
  std::vector<StoredPiece> pieces() const { return stored_pieces(shape, view, box); }
};
// The slots of every trained tensor (optim::trained_tensors) whose annotation in
// `placements` names `rank`: what that rank's checkpoint store writes and reads. The
// placements may be the whole job's (tensors on other ranks are skipped).
std::map<std::string, LocalSlot> local_slots(const std::vector<TensorPlacement>& placements, DeviceId rank);

class ShardedStore final : public runtime::CheckpointStore {
 public:
  // `placements`: every parameter this rank trains; the slots of the parameters and of their
  // optimizer states follow from them (local_slots). load() returns tensors of the local shapes.
  ShardedStore(std::string dir, int64_t keep, const std::vector<TensorPlacement>& placements, Communicator& comm);
  std::string save(const runtime::Snapshot& s) override;
  std::optional<runtime::Snapshot> load_latest() override;
  runtime::Snapshot load(const std::string& path) override;
  std::map<std::string, Tensor> load_parameters(const std::string& path) override;

 private:
  // Reads the boxes of `names` this rank holds from a step folder or file.
  std::map<std::string, Tensor> read_local(const std::string& path, const std::vector<std::string>& names) const;
  CheckpointManager manager_;
  std::map<std::string, LocalSlot> slots_;
  Communicator& comm_;
};

}  // namespace hetu::checkpoint
