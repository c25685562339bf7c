// Sharded checkpoints for distributed training: each logical tensor is stored once, with its
// full logical shape, in the usual step folder and checkpoint.h5 (Note [Checkpoint layout]).
// save_sharded: every rank writes the boxes it owns (disjoint, together covering each
// tensor); read_boxes: any rank reads the boxes it needs in any other layout (reshard on
// load), reading only the stored boxes that overlap them. CheckpointManager::load reads
// these files whole, so single-device resume and the ckpt tools need nothing else.
//
// Worked example: W (4, 6) f32 saved by 2 ranks split by rows, read by 3 ranks by columns.
//   rank r:  mine = {{"w", {4, 6}, DType::f32, Box{{2 * r, 0}, {2, 6}}, rows_of_w}};
//            std::string step = save_sharded(ckpt, 42, mine, {{"config", toml}}, comm);
//            // every rank: "runs/x/checkpoints/step-0000042", now `latest`
//   rank q:  std::vector<TensorBox> want = {{"w", {4, 6}, DType::f32, Box{{0, 2 * q}, {4, 2}}, {}}};
//            read_boxes(step, want);  // reads both stored row boxes (verifying each), copies
//            // the overlaps: want[0].values == W[:, 2q:2q+2]
//
// Note [Sharded checkpoint file]
// checkpoint.h5 with format_version = 2 (readers take 1 and 2). A tensor whose full shape one
// rank wrote as one box (a duplicated norm weight, a scalar) is an ordinary dataset with its
// crc32c. A tensor written in boxes has, instead of crc32c, three attributes with one row per
// written box, in write order: box_offsets and box_sizes (int64, n_boxes x rank, logical
// coordinates) and box_crc32c (uint32, n_boxes; CRC-32C of the box's row-major bytes).
// Readers require the boxes to tile the shape exactly and verify every box they read. An
// empty tensor carries crc32c = 0 from its creation. Each rank appends its rows to the
// attributes (read-modify-write) while it holds the write token; see Note [Sharded save].
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lib/checkpoint/checkpoint.h"
#include "lib/core/tensor.h"
#include "lib/hspmd/communicator.h"
#include "lib/hspmd/geometry.h"

namespace hetu::checkpoint {

// One box of a logical tensor that a rank writes or reads.
struct TensorBox {
  std::string name;  // logical tensor name, e.g. "h.0.attn.c_attn.weight" or "optim.m/h.0.attn.c_attn.weight"
  Shape shape;       // the logical (stored) shape
  DType dtype = DType::f32;
  Box box;           // in logical coordinates
  // box.size elements of dtype on the CPU: the data (save; any layout) or filled in (read:
  // allocated when undefined, else written in place and then it must be contiguous).
  Tensor values;
};

// Collective over every rank of comm.world() (a communicator that moves CPU f64 tensors).
// Each rank passes the boxes it owns, any number per tensor (GPT-2's fused qkv shard is 3);
// across ranks the boxes of one tensor must agree on shape and dtype, be disjoint and cover
// it. All of that is checked before anything is written, and every rank throws the same
// hetu::Error naming each offending tensor. Rank 0 runs CheckpointManager's folder protocol
// (work folder, fsync, rename to step-NNNNNNN, `latest`, prune to keep); ranks write the
// file in turn. Returns the step folder's path on every rank. Rank 0's metadata is stored
// (other ranks' is ignored). The checkpoint folder must be one path every rank sees.
std::string save_sharded(const CheckpointManager& manager, int64_t step, const std::vector<TensorBox>& mine,
                         const std::map<std::string, std::string>& metadata, Communicator& comm);

// Fills the values of every wanted box (any rank, independently, no communication), reading
// only the stored pieces that overlap a wanted box, each whole and verified against its
// checksum (a tensor written whole, e.g. by CheckpointManager::save, is one piece). Missing
// tensor, wrong logical shape or dtype, box outside the shape, unusable values: one
// hetu::UsageError listing every such problem, naming the file and the tensor.
void read_boxes(const std::string& step_folder_or_file, std::vector<TensorBox>& wanted);

// Step, metadata (verified) and the (name -> shape, dtype) catalogue of a checkpoint,
// without reading tensor data. sharded: written by save_sharded (format_version 2).
struct CheckpointInfo {
  int64_t step = 0;
  std::map<std::string, std::string> metadata;
  std::map<std::string, ExpectedTensor> tensors;
  bool sharded = false;
};
CheckpointInfo read_info(const std::string& step_folder_or_file);

}  // namespace hetu::checkpoint
