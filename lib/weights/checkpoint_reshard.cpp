// consolidate_checkpoint and reshard_checkpoint (checkpoint_reshard.h).
#include "lib/weights/checkpoint_reshard.h"

#include <map>
#include <optional>
#include <vector>

#include "lib/checkpoint/checkpoint.h"
#include "lib/checkpoint/sharded_checkpoint.h"
#include "lib/checkpoint/train_checkpoint_store.h"
#include "lib/launch/rank_map.h"
#include "lib/models/parallel_model.h"
#include "lib/optim/adamw.h"
#include "lib/weights/model_weights.h"

namespace hetu::weights {
namespace {

// The stored boxes of every tensor of `info` under `layout`: exactly what that job's ranks
// write when they save (checkpoint::local_slots of each device, the slots ShardedStore saves and
// loads with; a box of a view split into its stored pieces). Tensors that are not model
// parameters or their optimizer states are absent (stored whole).
std::map<std::string, std::vector<Box>> job_boxes(const ModelConfig& model, const pipeline::ParallelLayout& layout,
                                                  const checkpoint::CheckpointInfo& info) {
  std::vector<TensorPlacement> placements;
  for (const auto& [name, t] : info.tensors) {
    if (optim::is_state_name(name)) continue;
    if (std::optional<TensorPlacement> p = placement_of(model, layout, name, t.shape)) placements.push_back(*p);
  }
  std::map<std::string, std::vector<Box>> boxes;
  for (DeviceId device = 0; device < layout.num_devices(); ++device) {
    for (const auto& [name, slot] : checkpoint::local_slots(placements, device)) {
      if (!slot.writer || !info.tensors.count(name)) continue;
      for (const StoredPiece& piece : slot.pieces()) boxes[name].push_back(piece.box);
    }
  }
  return boxes;
}

// Reads `boxes` of every stored tensor (name -> its boxes; whole when absent).
std::vector<checkpoint::TensorBox> read_all(const std::string& step, const checkpoint::CheckpointInfo& info,
                                    const std::map<std::string, std::vector<Box>>& boxes) {
  std::vector<checkpoint::TensorBox> wanted;
  for (const auto& [name, t] : info.tensors) {
    auto it = boxes.find(name);
    for (const Box& b : it != boxes.end() ? it->second : std::vector<Box>{full_box(t.shape)})
      wanted.push_back({name, t.shape, t.dtype, b, empty(b.size, t.dtype)});
  }
  checkpoint::read_boxes(step, wanted);
  return wanted;
}

}  // namespace

RewrittenCheckpoint consolidate_checkpoint(const std::string& input, const std::string& output) {
  const std::string step = resolve_hetu_checkpoint(input);
  const checkpoint::CheckpointInfo info = checkpoint::read_info(step);
  prepare_output_folder(output);
  checkpoint::CheckpointData data{info.step, {}, info.metadata};
  for (checkpoint::TensorBox& box : read_all(step, info, {})) data.tensors[box.name] = box.values;
  const std::string written = checkpoint::CheckpointManager(output, 1).save(data);
  return {.input_step = step, .step = info.step, .sharded = info.sharded,
          .tensors = static_cast<int64_t>(data.tensors.size()), .written = written};
}

RewrittenCheckpoint reshard_checkpoint(const std::string& input, const std::string& output, const config::JobConfig& c,
                                       const std::string& host, Communicator& comm) {
  // The job's layout as if its ranks ran on one machine: only the boxes matter here.
  const auto devices = static_cast<int64_t>(c.strategy_devices().size());  // one rank per device of any strategy
  const pipeline::ParallelLayout layout =
      launch::parallel_layout(c, launch::map_ranks(c, std::vector<std::string>(static_cast<size_t>(devices), host)));
  const std::string step = resolve_hetu_checkpoint(input);
  const checkpoint::CheckpointInfo info = checkpoint::read_info(step);
  std::vector<checkpoint::TensorBox> all = read_all(step, info, job_boxes(c.model, layout, info));
  prepare_output_folder(output);
  const std::string written =
      checkpoint::save_sharded(checkpoint::CheckpointManager(output, 1), info.step, all, info.metadata, comm);
  return {.input_step = step, .step = info.step, .sharded = info.sharded, .boxes = static_cast<int64_t>(all.size()),
          .devices = devices, .written = written};
}

}  // namespace hetu::weights
