// BucketedEngine: the StepEngine of a layout per batch ([[parallel.bucket]]; Hydraulis'
// optimize vs compute strategy). The parameters AdamW updates, their summed gradients and
// the AdamW state stay in the optimize strategy's layout (the job's default). Each step's
// global batch comes cut by document length into buckets, each bucket in rounds of one
// global batch of rows (BucketedSource); the buckets of one strategy form its lane, and a
// lane's rounds run on that strategy's ParallelEngine, whose parameters are compute copies:
// before they run every parameter is resharded in (optimize param -> compute param); after
// them and the lane's own gradient sum over its holders (dual(A) -> A), every gradient is
// resharded back (A -> optimize param; under the optimize strategy's ZeRO-1, A -> its state,
// into the master shard's gradient) and added to the optimize layout's gradients, all of a
// lane's in one batched exchange (Note [Gradients back] in the .cpp). The
// optimize strategy's own lane computes on its parameters, with no copy. A lane's copy is
// memory only while its rounds run (Note [Compute copies on demand] in the .cpp). Every micro-batch's
// loss is a token sum over the whole global batch's target count, so the buckets' losses and
// gradients add up to the single-device step's. See Note [Lane order] in the .cpp. With
// buckets planned per step, each step names the strategy of each bucket (BucketedStep).
//
//   BucketedEngine engine(default_run, {{default_run, {0}}, {long_run, {1}}});
//   Trainer(StrategyRun{default_run.strategy, &engine, &bucketed_source, store, comm}, options);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lib/hspmd/coalesced_reshard.h"
#include "lib/runtime/parallel_engine.h"
#include "lib/runtime/step_engine.h"
#include "lib/runtime/strategy.h"
#include "lib/runtime/training_io.h"

namespace hetu::runtime {

// A step's batches, bucket by bucket: next_step() reads the step's global batch and returns
// each bucket's round count and the global batch's target count (the loss normalizer);
// micro_batch() is micro-batch `index` of `replica` (of the bucket's strategy) in round
// `round` of `bucket`, (micro_batch, seq_len / row_factor) tokens.
struct BucketedStep {
  std::vector<int64_t> rounds;  // per bucket
  // Per bucket, its rows per row of seq_len (lib/pipeline/bucket_rows.h): a full round runs
  // row_factor x a replica's micro-batches, each of micro_batch shorter rows (logged).
  std::vector<int64_t> row_factor;
  int64_t global_targets = 0;
  // Per bucket, the strategy that runs it when the buckets are planned per step ([parallel]
  // auto); empty: the lanes' own buckets.
  std::vector<std::string> strategies;
};

class BucketedSource : public BatchSource {
 public:
  virtual BucketedStep next_step() = 0;
  virtual Batch micro_batch(int64_t bucket, int64_t round, int64_t replica, int64_t index) = 0;
  // How many micro-batches `replica` runs in round `round` of `bucket` (every rank of the
  // replica is told the same).
  virtual int64_t micro_batches(int64_t bucket, int64_t round, int64_t replica) = 0;
  Batch next() final;  // throws: a bucketed step reads micro_batch()
};

// One strategy's buckets and the rank's run under it (its engine a ParallelEngine, or an
// IdleEngine where the strategy leaves the rank out).
struct ComputeLane {
  StrategyRun run;
  std::vector<int64_t> buckets;
};

class BucketedEngine final : public StepEngine {
 public:
  // `optimize`: the default strategy's run (engine, strategy, comm). `lanes`: one per strategy
  // the buckets name, each bucket in one lane; the optimize strategy's lane (if any) has its
  // run. Every strategy's placements list every tensor of the model, with the same shapes.
  BucketedEngine(StrategyRun optimize, std::vector<ComputeLane> lanes);

  const std::vector<nn::NamedParameter>& parameters() const override { return optimize_.engine->parameters(); }
  const std::vector<nn::NamedParameter>& optimizer_parameters() const override {
    return optimize_.engine->optimizer_parameters();
  }
  void refresh_parameters() override { optimize_.engine->refresh_parameters(); }
  void load_optimizer_parameters() override { optimize_.engine->load_optimizer_parameters(); }
  // `train` must be a BucketedSource.
  double forward_backward(BatchSource& train) override;
  double grad_norm() override { return optimize_.engine->grad_norm(); }
  double evaluate(BatchSource& val, int64_t batches) override { return optimize_.engine->evaluate(val, batches); }
  bool any_rank(bool flag) override { return optimize_.engine->any_rank(flag); }
  double tokens_per_step() const override { return optimize_.engine->tokens_per_step(); }

  // Seconds the last step spent resharding parameters in and gradients out, this rank.
  double last_reshard_in_s() const { return reshard_in_s_; }
  double last_reshard_out_s() const { return reshard_out_s_; }

 private:
  struct Lane {
    StrategyRun run;
    ParallelEngine* engine = nullptr;  // null: idle under the strategy
    std::vector<int64_t> buckets;
    bool optimize = false;             // the optimize strategy's own lane
    std::unique_ptr<CoalescedReshard> in;    // the optimize layout's parameters into its copy
    std::unique_ptr<CoalescedReshard> back;  // its gradients to the optimize layout (Note [Gradients back])
  };
  double run_lane(Lane& lane, const std::vector<int64_t>& buckets, BucketedSource& source, const BucketedStep& step);
  void reshard_in(const Lane& lane);
  void plan_moves(Lane& lane);
  void reshard_out(const Lane& lane);

  StrategyRun optimize_;
  std::vector<Lane> lanes_;  // the optimize lane first (Note [Lane order])
  double reshard_in_s_ = 0, reshard_out_s_ = 0;
};

}  // namespace hetu::runtime
