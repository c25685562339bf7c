// Whole and sharded checkpoint stores for the Trainer.
#include "app/train_checkpoint_store.h"

#include "app/newest_intact_checkpoint.h"

#include "lib/io/sharded_checkpoint.h"
#include "lib/optim/adamw.h"
#include "lib/util/error.h"

namespace hetu::app {

std::vector<FilePiece> file_pieces(const runtime::TensorShard& shard) {
  const Box& box = shard.box;
  if (shard.view == shard.shape) return {FilePiece{box, 0, box.numel()}};
  const size_t rank = shard.shape.size();
  HT_CHECK(rank >= 1 && shard.view.size() > rank, "checkpoint: a view {} of {} must split the first dim",
           shape_str(shard.view), shape_str(shard.shape));
  const size_t lead = shard.view.size() - rank;  // view dims [0, lead] make up stored dim 0
  for (size_t d = 1; d < rank; ++d) {
    HT_CHECK(shard.view[lead + d] == shard.shape[d], "checkpoint: a view {} of {} must split the first dim only",
             shape_str(shard.view), shape_str(shard.shape));
  }
  // Every combination of indices in view dims [0, lead) is one run of box.size[lead] rows.
  std::vector<int64_t> index(lead, 0);
  int64_t inner = 1;  // elements per stored row
  for (size_t d = 1; d < rank; ++d) inner *= box.size[lead + d];
  const int64_t piece = box.size[lead] * inner;
  std::vector<FilePiece> out;
  int64_t offset = 0;
  while (true) {
    int64_t row = 0;
    for (size_t d = 0; d <= lead; ++d) {
      const int64_t at = d < lead ? box.offset[d] + index[d] : box.offset[d];
      row = row * shard.view[d] + at;
    }
    Box b;
    b.offset.push_back(row);
    b.size.push_back(box.size[lead]);
    for (size_t d = 1; d < rank; ++d) {
      b.offset.push_back(box.offset[lead + d]);
      b.size.push_back(box.size[lead + d]);
    }
    out.push_back({b, offset, piece});
    offset += piece;
    size_t d = lead;
    while (d > 0 && ++index[d - 1] == box.size[d - 1]) index[--d] = 0;
    if (d == 0) break;
  }
  return out;
}

WholeStore::WholeStore(std::string dir, int64_t keep, std::map<std::string, io::ExpectedTensor> expected)
    : manager_(std::move(dir), keep), expected_(std::move(expected)) {}

std::string WholeStore::save(const runtime::Snapshot& s) { return manager_.save({s.step, s.tensors, s.metadata}); }

std::optional<runtime::Snapshot> WholeStore::load_latest() {
  return load_newest_intact(manager_, [this](const std::string& path) { return load(path); },
                            [](bool intact) { return intact; });
}

runtime::Snapshot WholeStore::load(const std::string& path) {
  io::CheckpointData d = manager_.load(path, &expected_);
  return {d.step, std::move(d.tensors), std::move(d.metadata)};
}

ShardedStore::ShardedStore(std::string dir, int64_t keep, std::map<std::string, runtime::TensorShard> shards,
                           std::map<std::string, Shape> local_shapes, Communicator& comm)
    : manager_(std::move(dir), keep), shards_(std::move(shards)), local_shapes_(std::move(local_shapes)), comm_(comm) {}

std::string ShardedStore::save(const runtime::Snapshot& s) {
  std::vector<io::TensorBox> mine;
  for (const auto& [name, tensor] : s.tensors) {
    auto it = shards_.find(name);
    HT_CHECK(it != shards_.end(), "checkpoint: no sharding known for tensor {}", name);
    if (!it->second.writer) continue;
    const Tensor flat = tensor.contiguous().reshape({tensor.numel()});
    for (const FilePiece& p : file_pieces(it->second)) {
      mine.push_back({name, it->second.shape, tensor.dtype(), p.box, flat.narrow(0, p.offset, p.count).view(p.box.size)});
    }
  }
  return io::save_sharded(manager_, s.step, mine, s.metadata, comm_);
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

std::map<std::string, Tensor> WholeStore::load_parameters(const std::string& path) {
  io::CheckpointData d = manager_.load(path);
  std::map<std::string, Tensor> params;
  for (auto& [name, tensor] : d.tensors) {
    if (!optim::is_state_name(name)) params[name] = tensor;
  }
  return params;
}

std::map<std::string, Tensor> ShardedStore::read_local(const std::string& path,
                                                       const std::vector<std::string>& names) const {
  const io::CheckpointInfo info = io::read_info(path);
  std::vector<io::TensorBox> wanted;
  std::vector<Tensor> targets;  // where each wanted box goes in the local tensors
  std::map<std::string, Tensor> tensors;
  for (const std::string& name : names) {
    const runtime::TensorShard& shard = shards_.at(name);
    auto stored = info.tensors.find(name);
    if (stored == info.tensors.end()) HT_USAGE_ERROR("checkpoint {} has no tensor {}", path, name);
    if (stored->second.shape != shard.shape) {
      HT_USAGE_ERROR("tensor {} has shape {} in the checkpoint {}, {} in the model", name,
                     shape_str(stored->second.shape), path, shape_str(shard.shape));
    }
    Tensor local = empty(local_shapes_.at(name), stored->second.dtype);
    tensors[name] = local;
    const Tensor flat = local.reshape({local.numel()});
    for (const FilePiece& p : file_pieces(shard)) {
      targets.push_back(flat.narrow(0, p.offset, p.count).view(p.box.size));
      wanted.push_back({name, shard.shape, stored->second.dtype, p.box, empty(p.box.size, stored->second.dtype)});
    }
  }
  io::read_boxes(path, wanted);
  for (size_t i = 0; i < wanted.size(); ++i) targets[i].copy_from(wanted[i].values);
  return tensors;
}

std::map<std::string, Tensor> ShardedStore::load_parameters(const std::string& path) {
  std::vector<std::string> names;
  for (const auto& [name, shard] : shards_) {
    if (!optim::is_state_name(name)) names.push_back(name);
  }
  return read_local(path, names);
}

runtime::Snapshot ShardedStore::load(const std::string& path) {
  std::vector<std::string> names;
  for (const auto& [name, shard] : shards_) names.push_back(name);
  const io::CheckpointInfo info = io::read_info(path);
  return {info.step, read_local(path, names), info.metadata};
}

}  // namespace hetu::app
