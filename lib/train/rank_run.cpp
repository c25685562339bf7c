// build_run and the rank's data (rank_run.h).
#include "lib/train/rank_run.h"

#include <spdlog/spdlog.h>

#include <map>
#include <optional>

#include "lib/checkpoint/recovery_store.h"
#include "lib/checkpoint/train_checkpoint_store.h"
#include "lib/config/compute_device.h"
#include "lib/launch/launch_job.h"
#include "lib/models/model_family.h"
#include "lib/models/parallel_model.h"
#include "lib/runtime/idle_engine.h"
#include "lib/runtime/parallel_engine.h"
#include "lib/util/error.h"

namespace hetu::train {
namespace {

// data.packing = "documents": whole documents per row, balanced over the replicas by attention cost.
void set_packing(const config::JobConfig& c, dataset::DataLoaderOptions& d) {
  if (c.data.packing == config::Packing::documents) d.packing = dataset::Packing::documents;
}

// One rank's model part, engine, data loader and checkpoint store under one strategy.
struct RankRun {
  runtime::Strategy strategy;
  std::unique_ptr<ParallelModel> part;      // none on a rank the strategy leaves idle
  std::unique_ptr<runtime::StepEngine> engine;
  std::unique_ptr<LoaderSource> train;
  std::vector<TensorPlacement> local;  // this rank's parameters' (the store's)
  std::unique_ptr<runtime::CheckpointStore> store;
};

// The durable sharded store, with this rank's per-step state snapshot when hetu launch gave
// a state folder (--state-dir; lib/checkpoint/recovery_store.h; a rehearsed node's own: node_state_dir).
std::unique_ptr<runtime::CheckpointStore> checkpoint_store(const config::JobConfig& c,
                                                           const std::vector<TensorPlacement>& local,
                                                           Communicator& host_comm, const std::string& state_dir) {
  const std::string dir = c.job.out_dir + "/checkpoints";
  if (state_dir.empty()) return std::make_unique<checkpoint::ShardedStore>(dir, c.checkpoint.keep, local, host_comm);
  return std::make_unique<checkpoint::RecoveryStore>(dir, c.checkpoint.keep, local, host_comm,
                                             launch::node_state_dir(c, host_comm.rank(), state_dir));
}

// Every trained tensor of the whole model with its placement under `layout`, in name order,
// the same on every rank: the names and shapes come from the family's parameter catalogue (a
// rank's part holds only its stages' parameters), checked against the ones this rank built.
std::vector<TensorPlacement> job_placements(const config::JobConfig& c, const pipeline::ParallelLayout& layout,
                                            const std::vector<TensorPlacement>& local) {
  const std::map<std::string, Shape> shapes = model_family(c.model.arch).parameter_shapes(c.model);
  for (const TensorPlacement& p : local) {
    auto it = shapes.find(p.name);
    HT_CHECK(it != shapes.end() && it->second == p.shape, "strategy: the model part holds {} {}, the {} catalogue {}",
             p.name, shape_str(p.shape), to_string(c.model.arch),
             it == shapes.end() ? std::string("has no such parameter") : "says " + shape_str(it->second));
  }
  std::vector<TensorPlacement> out;
  for (const auto& [name, shape] : shapes) {
    std::optional<TensorPlacement> p = placement_of(c.model, layout, name, shape);
    HT_CHECK(p.has_value(), "strategy: no stage of the layout holds {}", name);
    out.push_back(std::move(*p));
  }
  return out;
}

}  // namespace

dataset::DataLoaderOptions train_data(const config::JobConfig& c, const pipeline::ReplicaLayout& replica,
                                      std::vector<int64_t> shares) {
  dataset::DataLoaderOptions d;
  d.pattern = c.data.train;
  d.seq_len = c.training.seq_len;
  d.global_batch = c.training.global_batch;
  d.share_offset = replica.batch_offset;
  d.share_count = replica.batch;
  d.micro_batch = replica.micro_batch;
  d.sampling = c.data.sampling == config::Sampling::shuffled ? dataset::Sampling::shuffled : dataset::Sampling::sequential;
  d.seed = c.job.seed;
  set_packing(c, d);
  d.balance_window = c.data.balance_window;
  d.shares = std::move(shares);
  return d;
}

std::unique_ptr<LoaderSource> val_source(const config::JobConfig& c, Device device) {
  if (c.training.eval_every <= 0) return nullptr;
  dataset::DataLoaderOptions d;
  d.pattern = c.data.val;
  d.seq_len = c.training.seq_len;
  d.global_batch = c.training.micro_batch;
  set_packing(c, d);
  return std::make_unique<LoaderSource>(d, device);
}

runtime::StrategyRun build_run(std::string name, const config::JobConfig& c, const pipeline::ParallelLayout& layout,
                               int rank, Communicator& comm, Communicator& host_comm, Device compute,
                               const std::string& state_dir, bool fill_parameters) {
  auto run = std::make_shared<RankRun>();
  const std::optional<pipeline::Position> located = layout.locate(rank);
  if (!located) {
    // Idle: no model part, no compute; one sequence of each global batch keeps the data position.
    spdlog::info("strategy {}: this rank is idle (no model part)", name);
    run->strategy = runtime::make_strategy(std::move(name), layout, job_placements(c, layout, {}));
    run->engine = std::make_unique<runtime::IdleEngine>(comm, static_cast<double>(layout.global_batch * c.training.seq_len));
    pipeline::ReplicaLayout one_sequence;
    run->train = std::make_unique<LoaderSource>(train_data(c, one_sequence), compute);
    run->store = checkpoint_store(c, run->local, host_comm, state_dir);
    return {&run->strategy, run->engine.get(), run->train.get(), run->store.get(), &comm, run};
  }
  const pipeline::Position position = *located;
  const pipeline::ReplicaLayout& replica = layout.replicas[static_cast<size_t>(position.replica)];
  const DType activations = config::compute_dtype(c.training.precision);
  run->part = std::make_unique<ParallelModel>(c.model, c.job.seed, layout, position, &comm, activations,
                                              fill_parameters);
  ParallelModel& part = *run->part;
  part.model().to(compute);
  spdlog::info("model part ({}): {} parameters on {} (replica {}, stage {}, tp rank {}/{}, layers {}-{}), computing "
               "in {}, gradients summed in {} over {}", name,
               part.model().num_parameters(), compute.str(), position.replica, position.stage, position.tp_index,
               layout.stage(position).tp(), layout.stage(position).first_layer, layout.stage(position).last_layer,
               to_string(c.training.precision), to_string(c.training.grad_reduce_dtype), comm.backend());
  run->local = part.placements();
  const std::vector<TensorPlacement>& local = run->local;
  run->strategy = runtime::make_strategy(std::move(name), layout, job_placements(c, layout, local));
  run->engine = std::make_unique<runtime::ParallelEngine>(
      run->strategy, position, comm, part.stage(), part.model().named_parameters(), c.training.seq_len, c.model.hidden,
      c.training.micro_batch, activations, config::compute_dtype(c.training.grad_reduce_dtype));
  std::vector<int64_t> shares;
  for (const pipeline::ReplicaLayout& r : layout.replicas) shares.push_back(r.batch);
  run->train = std::make_unique<LoaderSource>(train_data(c, replica, std::move(shares)), compute);
  run->store = checkpoint_store(c, local, host_comm, state_dir);
  return {&run->strategy, run->engine.get(), run->train.get(), run->store.get(), &comm, run};
}

}  // namespace hetu::train
