// The Trainer's checkpoint stores (runtime::CheckpointStore) over lib/io:
//   WholeStore   one process holds every tensor: io::CheckpointManager save/load, every
//                tensor checked against the model's names, shapes and dtypes;
//   ShardedStore one rank of a parallel job: each rank writes the boxes it owns of every
//                logical tensor (io::save_sharded, collective) and reads back exactly the
//                boxes its layout needs, whatever layout wrote them (reshard on load).
// load_latest() of both resumes from the newest intact checkpoint (newest_intact_checkpoint.h).
// A local tensor whose layout is a view of the logical shape (GPT-2's fused qkv split by
// head) maps to several boxes of the stored tensor: see file_pieces().
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lib/hspmd/communicator.h"
#include "lib/io/checkpoint.h"
#include "lib/runtime/training_io.h"

namespace hetu::app {

// A piece of a local shard: `box` of the stored (logical) tensor, holding the `count`
// elements at `offset` of the local tensor's row-major data.
struct FilePiece {
  Box box;
  int64_t offset = 0;
  int64_t count = 0;
};
// The stored-tensor boxes of a shard. The view must reshape the logical shape by splitting
// its first dim into several ((3C, C) viewed as (3, C, C)); other dims equal.
std::vector<FilePiece> file_pieces(const runtime::TensorShard& shard);

class WholeStore final : public runtime::CheckpointStore {
 public:
  WholeStore(std::string dir, int64_t keep, std::map<std::string, io::ExpectedTensor> expected);
  std::string save(const runtime::Snapshot& s) override;
  std::optional<runtime::Snapshot> load_latest() override;
  runtime::Snapshot load(const std::string& path) override;
  std::map<std::string, Tensor> load_parameters(const std::string& path) override;

 private:
  io::CheckpointManager manager_;
  std::map<std::string, io::ExpectedTensor> expected_;
};

class ShardedStore final : public runtime::CheckpointStore {
 public:
  // `local`: every tensor this rank trains or keeps (parameters and optimizer state) with its
  // sharding; load() returns tensors shaped like them.
  ShardedStore(std::string dir, int64_t keep, std::map<std::string, runtime::TensorShard> shards,
               std::map<std::string, Shape> local_shapes, Communicator& comm);
  std::string save(const runtime::Snapshot& s) override;
  std::optional<runtime::Snapshot> load_latest() override;
  runtime::Snapshot load(const std::string& path) override;
  std::map<std::string, Tensor> load_parameters(const std::string& path) override;

 private:
  // Reads the boxes of `names` this rank holds from a step folder or file.
  std::map<std::string, Tensor> read_local(const std::string& path, const std::vector<std::string>& names) const;
  io::CheckpointManager manager_;
  std::map<std::string, runtime::TensorShard> shards_;
  std::map<std::string, Shape> local_shapes_;
  Communicator& comm_;
};

}  // namespace hetu::app
