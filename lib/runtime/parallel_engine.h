// ParallelEngine: the StepEngine of one rank in any parallel layout (data, tensor and
// pipeline parallel, replicas of different shapes). A step: read this replica's share of
// the global batch in micro-batches, run the stage's schedule (pipeline::StageExecutor),
// then sum every parameter's gradient over all its holders with the planner: the gradient
// of a parameter annotated A (all replicas and stages that hold it, each with its tensor-
// parallel layout) is annotated dual(A) — partial across holders, partial over a tp group
// where the parameter is duplicated — and redistributed dual(A) -> A. Between replicas of
// different tp that is a split collective per common block; for GPT-2's tied embedding it
// also sums the first and last stage's contributions. Gradients whose plan is one all_reduce
// of whole shards (all of them under plain data parallelism) are summed together, one
// all_reduce per device list (Note [Gradient buckets]). Losses are token sums divided by the
// global batch's token count, so uneven shares weigh correctly.
// ZeRO-1 (a placement whose state is not its param annotation, zero_state_placement): the
// gradient is summed straight into the state layout (dual(param) -> state, a reduce-scatter
// in effect) as the grad of this rank's f32 master shard, which AdamW updates; the norm
// counts every master shard once; refresh_parameters gathers the shards back into the
// parameter (state -> param).
#pragma once

#include <memory>
#include <vector>

#include "lib/hspmd/comm_plan.h"
#include "lib/hspmd/communicator.h"
#include "lib/hspmd/dist_union.h"
#include "lib/hspmd/plan_cache.h"
#include "lib/hspmd/tensor_placement.h"
#include "lib/pipeline/parallel_layout.h"
#include "lib/pipeline/stage_executor.h"
#include "lib/runtime/step_engine.h"
#include "lib/runtime/strategy.h"

namespace hetu::runtime {

class ParallelEngine final : public StepEngine {
 public:
  // `params`: this rank's shards, each with the placement of the same name in `placements`
  // (gradients are redistributed dual(param) -> grad; those plans and the pipeline edges'
  // come from `plans`, which must outlive the engine: a strategy's plans are shared by
  // whatever runs under it).
  // hidden: the model width (stage edges carry (micro_batch, seq_len, hidden) activations of
  // activation_dtype); validation batches hold eval_batch sequences in every layout. The
  // communicator's device (communicator.h) is where every buffer lives. Gradients are summed
  // in grad_reduce_dtype (cast before the sync and back after; f32 keeps them exact).
  ParallelEngine(const pipeline::ParallelLayout& layout, pipeline::Position position, Communicator& comm,
                 pipeline::StageCompute& compute, std::vector<nn::NamedParameter> params,
                 const std::vector<TensorPlacement>& placements, PlanCache& plans, int64_t seq_len,
                 int64_t hidden, int64_t eval_batch, DType activation_dtype = DType::f32,
                 DType grad_reduce_dtype = DType::f32);
  // The engine of `strategy` (its layout, placements and plans; it must outlive the engine).
  ParallelEngine(const Strategy& strategy, pipeline::Position position, Communicator& comm,
                 pipeline::StageCompute& compute, std::vector<nn::NamedParameter> params, int64_t seq_len,
                 int64_t hidden, int64_t eval_batch, DType activation_dtype = DType::f32,
                 DType grad_reduce_dtype = DType::f32)
      : ParallelEngine(strategy.layout, position, comm, compute, std::move(params), strategy.placements,
                       *strategy.plans, seq_len, hidden, eval_batch, activation_dtype, grad_reduce_dtype) {}

  const std::vector<nn::NamedParameter>& parameters() const override { return params_; }
  const std::vector<nn::NamedParameter>& optimizer_parameters() const override { return optimized_; }
  void refresh_parameters() override;
  void load_optimizer_parameters() override;
  double forward_backward(BatchSource& train) override;
  double grad_norm() override;
  // Replica 0 evaluates (each batch one pass through its pipeline); the others join the sum.
  double evaluate(BatchSource& val, int64_t batches) override;
  bool any_rank(bool flag) override;
  double tokens_per_step() const override;

  // Sums gradients over holders (public for tests and for BucketedEngine).
  void sync_grads();
  // Forward and backward of this replica's micro-batches of one pass (layout's replica
  // micro_batches() of them), adding to the parameters' gradients without summing them over
  // holders; returns this rank's share of the loss (token sum / normalizer). BucketedEngine
  // runs several passes, then sync_grads() once.
  double accumulate(const std::vector<pipeline::MicroBatch>& micro, double normalizer);
  const pipeline::ParallelLayout& layout() const { return layout_; }
  const pipeline::Position& position() const { return position_; }

 private:
  struct Sync {
    nn::NamedParameter param;
    TensorPlacement placement;
    bool communicates;  // more than one holder
    bool counts;        // this rank counts the gradient in the norm and writes it to checkpoints
    Union grad_annotation;
    const CommPlan* plan = nullptr;  // from the plan cache
    Shape local_view;   // this rank's box of the view
    bool bucketed = false;  // summed in a bucket (see Note [Gradient buckets])
    // ZeRO-1 only: this rank's master shard of the state (defined when the placement has
    // one), its box of the view, and the plans state -> param and param -> state.
    Tensor master;
    Shape master_view;
    const CommPlan* refresh = nullptr;
    const CommPlan* load = nullptr;
  };
  // Gradients summed by one all_reduce of their concatenation over `group`.
  struct Bucket {
    DeviceGroup group;
    std::vector<size_t> syncs;  // indices into syncs_, in name order
  };
  void build_buckets();
  double sum_over_world(double value);

  pipeline::ParallelLayout layout_;
  pipeline::Position position_;
  Communicator& comm_;
  pipeline::StageCompute& compute_;
  std::vector<nn::NamedParameter> params_;
  std::vector<nn::NamedParameter> optimized_;  // optimizer_parameters(), in name order
  std::vector<Sync> syncs_;  // in name order: the same order on every rank
  std::vector<Bucket> buckets_;
  int64_t seq_len_;
  DType grad_reduce_dtype_;
  pipeline::StageExecutor executor_;
  pipeline::StageExecutor eval_executor_;  // edges shaped for eval_batch sequences
};

}  // namespace hetu::runtime
