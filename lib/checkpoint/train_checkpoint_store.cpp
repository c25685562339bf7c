// The sharded checkpoint store of the Trainer.
#include "lib/checkpoint/train_checkpoint_store.h"

#include "lib/checkpoint/newest_intact_checkpoint.h"
#include "lib/checkpoint/sharded_checkpoint.h"
#include "lib/optim/adamw.h"
#include "lib/optim/trained_tensors.h"
#include "lib/util/error.h"

namespace hetu::checkpoint {

std::map<std::string, LocalSlot> local_slots(const std::vector<TensorPlacement>& placements, DeviceId rank) {
  std::map<std::string, LocalSlot> slots;
  for (const TensorPlacement& p : placements) {
    for (const optim::TrainedTensor& t : optim::trained_tensors(p)) {
      const Union& annotation = t.annotation(p);
      if (!annotation.member_of(rank)) continue;
      const Box box = view_box(p, annotation, rank);
      slots[t.name] =
          LocalSlot{p.shape, p.view, box, local_shape(p.shape, p.view, box), first_holder(annotation, rank)};
    }
  }
  return slots;
}

ShardedStore::ShardedStore(std::string dir, int64_t keep, const std::vector<TensorPlacement>& placements,
                           Communicator& comm)
    : manager_(std::move(dir), keep), slots_(local_slots(placements, comm.rank())), comm_(comm) {}

std::string ShardedStore::save(const runtime::Snapshot& s) {
  std::vector<TensorBox> mine;
  for (const auto& [name, tensor] : s.tensors) {
    auto it = slots_.find(name);
    HT_CHECK(it != slots_.end(), "checkpoint: no placement known for tensor {}", name);
    const LocalSlot& slot = it->second;
    if (!slot.writer) continue;
    const Tensor flat = tensor.contiguous().reshape({tensor.numel()});
    for (const StoredPiece& p : slot.pieces()) {
      mine.push_back({name, slot.shape, tensor.dtype(), p.box, flat.narrow(0, p.offset, p.count).view(p.box.size)});
    }
  }
  return save_sharded(manager_, s.step, mine, s.metadata, comm_);
}

std::optional<runtime::Snapshot> ShardedStore::load_latest() {
  // Every rank lists the same folder, so they try the same checkpoints in the same order.
  auto everywhere = [this](bool intact) {
    Tensor damaged = full({1}, intact ? 0.0 : 1.0, DType::f64);
    comm_.all_reduce(damaged, comm_.world());
    return damaged.item() == 0;
  };
  return load_newest_intact(manager_, [this](const std::string& path) { return load(path); }, everywhere);
}

// Note [Reshard on load]: a strategy switch and a resume under another layout answer the same
// question, "which box of each trained tensor does this rank hold now", with the same
// geometry (local_slots: trained_tensors, view_box, stored_pieces; box intersection in
// lib/hspmd/geometry.h), but they move the data differently, and should. In memory the
// boxes sit in other ranks' memory, so a CommPlan says who sends what to whom, the same on
// every rank (reshard, PlanCache). In a file every stored box is readable by every rank,
// so each rank reads the stored boxes that overlap its own and nothing is sent: this works
// for any writer, also one of another world size (8 ranks written, 4 reading; the
// single-device fixture), whose layout is no annotation over the readers' devices, and it
// reads each byte once instead of reading it on a writer-shaped rank and sending it on.
std::map<std::string, Tensor> ShardedStore::read_local(const std::string& path,
                                                       const std::vector<std::string>& names) const {
  const CheckpointInfo info = read_info(path);
  std::vector<TensorBox> wanted;
  std::vector<Tensor> targets;  // where each wanted box goes in the local tensors
  std::map<std::string, Tensor> tensors;
  for (const std::string& name : names) {
    const LocalSlot& slot = slots_.at(name);
    auto stored = info.tensors.find(name);
    if (stored == info.tensors.end()) HT_USAGE_ERROR("checkpoint {} has no tensor {}", path, name);
    if (stored->second.shape != slot.shape) {
      HT_USAGE_ERROR("tensor {} has shape {} in the checkpoint {}, {} in the model", name,
                     shape_str(stored->second.shape), path, shape_str(slot.shape));
    }
    Tensor local = empty(slot.local, stored->second.dtype);
    tensors[name] = local;
    const Tensor flat = local.reshape({local.numel()});
    for (const StoredPiece& p : slot.pieces()) {
      targets.push_back(flat.narrow(0, p.offset, p.count).view(p.box.size));
      wanted.push_back({name, slot.shape, stored->second.dtype, p.box, empty(p.box.size, stored->second.dtype)});
    }
  }
  read_boxes(path, wanted);
  for (size_t i = 0; i < wanted.size(); ++i) targets[i].copy_from(wanted[i].values);
  return tensors;
}

std::map<std::string, Tensor> ShardedStore::load_parameters(const std::string& path) {
  std::vector<std::string> names;
  for (const auto& [name, slot] : slots_) {
    if (!optim::is_state_name(name)) names.push_back(name);
  }
  return read_local(path, names);
}

runtime::Snapshot ShardedStore::load(const std::string& path) {
  std::vector<std::string> names;
  for (const auto& [name, slot] : slots_) names.push_back(name);
  const CheckpointInfo info = read_info(path);
  return {info.step, read_local(path, names), info.metadata};
}

}  // namespace hetu::checkpoint
