// `hetu ckpt consolidate IN OUT` (a sharded checkpoint -> one whole-tensor file) and
// `hetu ckpt reshard IN OUT --config JOB` (rewrite a checkpoint with the stored boxes the
// given job's ranks will read: each rank then reads exactly its own boxes). Both read through
// io::read_boxes, the reshard-on-load path training uses, and verify every stored piece they
// read. OUT is a new (or empty) checkpoints folder with one step folder and `latest`; the
// optimizer state and metadata (data position, job config) come along, so training resumes
// from OUT exactly as from IN.
#include <spdlog/spdlog.h>

#include "app/cmd_ckpt.h"
#include "app/commands.h"
#include "app/rank_map.h"
#include "lib/hspmd/communicator.h"
#include "lib/hspmd/mpi_session.h"
#include "lib/io/checkpoint.h"
#include "lib/io/sharded_checkpoint.h"
#include "lib/optim/adamw.h"
#include "lib/util/error.h"
#include "models/parallel_model.h"

namespace hetu::app {
namespace {

// The stored boxes of `name` under `layout`: the boxes its writers write when that job saves
// (a parameter's from its param annotation, an optimizer state's from the state annotation),
// split into view pieces; the same placements training saves and loads with.
std::vector<Box> job_boxes(const ModelConfig& model, const pipeline::ParallelLayout& layout, const std::string& name,
                           const Shape& shape) {
  const bool state = optim::is_state_name(name);
  const std::string param = state ? optim::param_of_state(name) : name;
  const std::optional<TensorPlacement> placement = placement_of(model, layout, param, shape);
  if (!placement) return {full_box(shape)};  // not a model parameter: stored whole
  const TensorPlacement& p = *placement;
  const Union& annotation = state ? p.state : p.param;
  std::vector<Box> boxes;
  for (DeviceId device : annotation.devices()) {
    if (!first_holder(annotation, device)) continue;
    for (const StoredPiece& piece : stored_pieces(p.shape, p.view, view_box(p, annotation, device)))
      boxes.push_back(piece.box);
  }
  return boxes;
}

// Reads `boxes` of every stored tensor (name -> its boxes; whole when absent).
std::vector<io::TensorBox> read_all(const std::string& step, const io::CheckpointInfo& info,
                                    const std::map<std::string, std::vector<Box>>& boxes) {
  std::vector<io::TensorBox> wanted;
  for (const auto& [name, t] : info.tensors) {
    auto it = boxes.find(name);
    for (const Box& b : it != boxes.end() ? it->second : std::vector<Box>{full_box(t.shape)})
      wanted.push_back({name, t.shape, t.dtype, b, empty(b.size, t.dtype)});
  }
  io::read_boxes(step, wanted);
  return wanted;
}

}  // namespace

int run_ckpt_consolidate(const CkptReshardOptions& options) {
  const std::string step = resolve_hetu_checkpoint(options.input);
  const io::CheckpointInfo info = io::read_info(step);
  prepare_output_folder(options.output);
  io::CheckpointData data{info.step, {}, info.metadata};
  for (io::TensorBox& box : read_all(step, info, {})) data.tensors[box.name] = box.values;
  const std::string written = io::CheckpointManager(options.output, 1).save(data);
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
      parallel_layout(c, map_ranks(c, std::vector<std::string>(static_cast<size_t>(devices), mpi.host())));
  const std::string step = resolve_hetu_checkpoint(options.input);
  const io::CheckpointInfo info = io::read_info(step);
  std::map<std::string, std::vector<Box>> boxes;
  for (const auto& [name, t] : info.tensors) {
    boxes[name] = job_boxes(c.model, layout, name, t.shape);
  }
  std::vector<io::TensorBox> all = read_all(step, info, boxes);
  prepare_output_folder(options.output);
  std::unique_ptr<Communicator> comm = make_mpi_communicator();
  const std::string written = io::save_sharded(io::CheckpointManager(options.output, 1), info.step, all,
                                               info.metadata, *comm);
  spdlog::info("resharded {} (step {}) for {} ({} devices): {} boxes -> {}", step, info.step, c.source, devices,
               all.size(), written);
  return 0;
}

}  // namespace hetu::app
