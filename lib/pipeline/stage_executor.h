// StageExecutor: the only code that walks pipeline schedule actions. One per rank: it runs
// its replica's schedule (pipeline_schedule.h) for its stage over the step's micro-batches,
// moving activations forward and gradients back through the HSPMD planner. A pipeline edge
// is redistribute between two stage groups: p2p when both stages have the same tp, the
// generic repartition when they differ; the gradient goes through the dual plan
// (redistribute.h). After every action, the action's send and the next action's receive
// are posted as one batch (P2PExchange), which is deadlock-free for GPipe and 1F1B
// (validate_paired_exchange). The edge plans come from the strategy's PlanCache (keyed by
// the two stage annotations and the activation shape), so executors of one strategy, and
// every later executor of it, plan each edge once.
//
// Activations are duplicated over a stage's tp group; their gradients are partial (the sum
// convention of redistribute.h), and so is the loss gradient: the loss is seeded with 1 on
// tp index 0 of the last stage and 0 on the other tp ranks. Under tp the activation crosses
// an edge once, in slices, and the receiving stage all-gathers it (Note [Sliced stage edges]).
//
//   StageExecutor exec(layout, my_position, comm, *strategy.plans, {micro_batch, seq_len, hidden});
//   double partial = exec.train(compute, micro_batches, global_tokens);  // grads accumulated
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "lib/core/tensor.h"
#include "lib/hspmd/comm_plan.h"
#include "lib/hspmd/communicator.h"
#include "lib/hspmd/dist_union.h"
#include "lib/hspmd/plan_cache.h"
#include "lib/pipeline/parallel_layout.h"

namespace hetu::pipeline {

// What a stage computes; the app adapts a model part to it.
class StageCompute {
 public:
  virtual ~StageCompute() = default;
  // First stage: `input` is token ids (mb, T); other stages: the hidden state received.
  // cu_seqlens: the micro-batch's document offsets (MicroBatch), empty for windows.
  virtual Tensor forward(const Tensor& input, std::span<const int64_t> cu_seqlens) = 0;
  // Last stage only: Σ loss over the micro-batch's targets / normalizer, a scalar.
  virtual Tensor loss(const Tensor& output, const Tensor& targets, double normalizer) = 0;
};

// Every stage of a replica reads the same micro-batches, offsets included, so each stage
// knows the documents of the activations it receives.
struct MicroBatch {
  Tensor inputs;   // (mb, T) token ids
  Tensor targets;  // (mb, T); -100: ignored
  std::vector<int64_t> cu_seqlens = {};  // packed documents: offsets into the mb·T tokens; empty: windows
};

class StageExecutor {
 public:
  // hidden_shape: the activation crossing stage edges for one micro-batch, (mb, T, C). The
  // edge plans are taken from `plans`, which must outlive the executor.
  StageExecutor(const ParallelLayout& layout, Position position, Communicator* comm, PlanCache& plans,
                Shape hidden_shape, DType dtype = DType::f32);

  // Forward and backward of every micro-batch (gradients accumulate into the parameters),
  // any number of them, all of one (rows, T): a layout's micro_batches() of (micro_batch,
  // seq_len), or a bucket's rows (bucket_rows.h), the edges planned for their shape.
  // Returns the sum of the losses this rank seeded (its replica's share of the step loss on
  // tp index 0 of the last stage; 0 elsewhere).
  double train(StageCompute& compute, const std::vector<MicroBatch>& micro_batches, double normalizer);
  // Forward only, no gradients; same return value.
  double evaluate(StageCompute& compute, const std::vector<MicroBatch>& micro_batches, double normalizer);

  bool first_stage() const { return position_.stage == 0; }
  bool last_stage() const { return position_.stage == num_stages_ - 1; }
  // True on the rank whose losses count (tp index 0 of the last stage).
  bool seeds_loss() const { return last_stage() && position_.tp_index == 0; }

 private:
  // A pipeline edge's plans, from the plan cache (Note [Sliced stage edges]).
  struct Edge {
    Union src, dst;                 // the activation on the sending and the receiving stage (duplicated)
    std::optional<Union> slices;    // its slices on the receiving stage; none: each rank gets a whole copy
    const CommPlan* forward = nullptr;   // src -> crossing(): one send/recv step
    const CommPlan* gather = nullptr;    // slices -> dst, on the receiving stage (all_gather)
    const CommPlan* scatter = nullptr;   // dual(dst) -> dual(slices), on the receiving stage (reduce_scatter)
    const CommPlan* backward = nullptr;  // dual(crossing()) -> dual(src): one send/recv step
    const Union& crossing() const { return slices ? *slices : dst; }
  };
  Edge plan_edge(const Union& src, const Union& dst, const Shape& shape);
  double run(StageCompute& compute, const std::vector<MicroBatch>& micro_batches, double normalizer, bool training);
  void shape_edges(const Shape& inputs);

  ReplicaLayout replica_;
  Position position_;
  Communicator* comm_;
  PlanCache& plans_;
  Shape hidden_shape_;
  DType dtype_;
  int64_t num_stages_ = 1;
  std::optional<Edge> from_prev_;  // unless first_stage()
  std::optional<Edge> to_next_;    // unless last_stage()
};

}  // namespace hetu::pipeline
