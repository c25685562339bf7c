// One rank's run under one strategy of a job: its model part (none on a rank the strategy
// leaves idle), its engine (a ParallelEngine, or an IdleEngine that only keeps the data
// position), its data loader (its replica's share of each global batch) and the sharded
// checkpoint store (with the per-step state snapshot when hetu launch gave a state folder).
//
//   runtime::StrategyRun run = build_run("default", c, layout, rank, comm, host_comm, compute, state_dir);
//   LoaderSource val(validation_data(c), compute);
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lib/config/job_config.h"
#include "lib/core/device.h"
#include "lib/dataset/data_loader.h"
#include "lib/hspmd/communicator.h"
#include "lib/pipeline/parallel_layout.h"
#include "lib/runtime/strategy.h"
#include "lib/runtime/training_io.h"
#include "lib/util/step_timer.h"

namespace hetu::train {

// The Trainer's data interface over dataset::DataLoader, batches moved to the compute device.
class LoaderSource final : public runtime::BatchSource {
 public:
  LoaderSource(const dataset::DataLoaderOptions& options, Device device) : loader_(options), device_(device) {}
  runtime::Batch next() override {
    timing::Scope scope(timing::Phase::data, "data");
    dataset::Batch b = loader_.next();
    return {b.x.to(device_), b.y.to(device_), std::move(b.cu_seqlens), b.global_targets};
  }
  std::string save_position() const override { return loader_.position().to_string(); }
  void restore_position(const std::string& position) override { loader_.restore(dataset::DataPosition::parse(position)); }

 private:
  dataset::DataLoader loader_;
  Device device_;
};

// The training data of `replica` (its batch offset, share and micro-batch); `shares`: every
// replica's batch share (packed documents balance over them; an idle rank's one-sequence
// reader passes none: its data position still moves a global batch per step).
dataset::DataLoaderOptions train_data(const config::JobConfig& c, const pipeline::ReplicaLayout& replica,
                                      std::vector<int64_t> shares = {});

// Validation batches of training.micro_batch sequences, in every layout (so every layout
// evaluates the same batches); none when the job does not evaluate.
std::unique_ptr<LoaderSource> val_source(const config::JobConfig& c, Device device);

// The rank's run under strategy `name` with `layout`; `comm` carries the training tensors,
// `host_comm` the checkpoint traffic. Without `fill_parameters` the part's parameters are
// allocated only (a switch or a bucket's reshard moves them in).
runtime::StrategyRun build_run(std::string name, const config::JobConfig& c, const pipeline::ParallelLayout& layout,
                               int rank, Communicator& comm, Communicator& host_comm, Device compute,
                               const std::string& state_dir, bool fill_parameters = true);

}  // namespace hetu::train
