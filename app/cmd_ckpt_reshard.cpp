// `hetu ckpt consolidate IN OUT` (a sharded checkpoint -> one whole-tensor file) and
// `hetu ckpt reshard IN OUT --config JOB` (rewrite a checkpoint with the stored boxes the
// given job's ranks will read: each rank then reads exactly its own boxes; which boxes those
// are comes from checkpoint::local_slots, the checkpoint store's own). Both read through
// checkpoint::read_boxes, the reshard-on-load path training uses, and verify every stored piece they
// read. OUT is a new (or empty) checkpoints folder with one step folder and `latest`; the
// optimizer state and metadata (data position, job config) come along, so training resumes
// from OUT exactly as from IN.
#include <spdlog/spdlog.h>

#include "lib/weights/model_weights.h"
#include "app/commands.h"
#include "lib/launch/rank_map.h"
#include "lib/hspmd/communicator.h"
#include "lib/hspmd/mpi_session.h"
#include "lib/checkpoint/checkpoint.h"
#include "lib/checkpoint/sharded_checkpoint.h"
#include "lib/checkpoint/train_checkpoint_store.h"
#include "lib/optim/adamw.h"
#include "lib/util/error.h"
#include "lib/models/parallel_model.h"

namespace hetu::app {
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

int run_ckpt_consolidate(const CkptReshardOptions& options) {
  const std::string step = weights::resolve_hetu_checkpoint(options.input);
  const checkpoint::CheckpointInfo info = checkpoint::read_info(step);
  weights::prepare_output_folder(options.output);
  checkpoint::CheckpointData data{info.step, {}, info.metadata};
  for (checkpoint::TensorBox& box : read_all(step, info, {})) data.tensors[box.name] = box.values;
  const std::string written = checkpoint::CheckpointManager(options.output, 1).save(data);
  spdlog::info("consolidated {} ({} tensors, step {}{}) -> {}", step, data.tensors.size(), info.step,
               info.sharded ? ", sharded" : "", written);
  return 0;
}

int run_ckpt_reshard(const CkptReshardOptions& options) {
  MpiSession mpi(nullptr, nullptr);
  HT_CHECK(mpi.world_size() == 1, "hetu ckpt reshard runs as one process (not under mpirun)");
  const config::LoadedConfig loaded = load_job({options.config, options.overrides, LogLevel::info});
  const config::JobConfig& c = loaded.config;
  // The job's layout as if its ranks ran on one machine: only the boxes matter here.
  const auto devices = static_cast<int64_t>(c.strategy_devices().size());  // one rank per device of any strategy
  const pipeline::ParallelLayout layout =
      launch::parallel_layout(c, launch::map_ranks(c, std::vector<std::string>(static_cast<size_t>(devices), mpi.host())));
  const std::string step = weights::resolve_hetu_checkpoint(options.input);
  const checkpoint::CheckpointInfo info = checkpoint::read_info(step);
  std::vector<checkpoint::TensorBox> all = read_all(step, info, job_boxes(c.model, layout, info));
  weights::prepare_output_folder(options.output);
  std::unique_ptr<Communicator> comm = make_mpi_communicator();
  const std::string written = checkpoint::save_sharded(checkpoint::CheckpointManager(options.output, 1), info.step, all,
                                               info.metadata, *comm);
  spdlog::info("resharded {} (step {}) for {} ({} devices): {} boxes -> {}", step, info.step, c.source, devices,
               all.size(), written);
  return 0;
}

}  // namespace hetu::app
