// IdleEngine: the StepEngine of a rank that the current strategy leaves out (Trainer
// switches, strategy.h). It holds no model part and computes nothing; it joins the step's
// world reductions with zero (world_sum.h), in the same order as ParallelEngine, so the
// loss, gradient norm, evaluation and stop flag come out the same on every rank. Each step
// it reads one sequence of the global batch (a data source of share 1), so its data
// position stays where every other rank's is and carries over when a switch brings it back.
//
//   IdleEngine engine(comm, global_batch * seq_len);
#pragma once

#include "lib/hspmd/communicator.h"
#include "lib/runtime/step_engine.h"

namespace hetu::runtime {

class IdleEngine final : public StepEngine {
 public:
  IdleEngine(Communicator& comm, double tokens_per_step) : comm_(comm), tokens_per_step_(tokens_per_step) {}

  const std::vector<nn::NamedParameter>& parameters() const override { return none_; }
  double forward_backward(BatchSource& train) override;
  double grad_norm() override;
  double evaluate(BatchSource& val, int64_t batches) override;
  bool any_rank(bool flag) override;
  double tokens_per_step() const override { return tokens_per_step_; }

 private:
  Communicator& comm_;
  double tokens_per_step_;
  std::vector<nn::NamedParameter> none_;
};

}  // namespace hetu::runtime
