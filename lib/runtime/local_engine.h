// LocalEngine: the single-device StepEngine. A step is `micro_batches` forward/backward
// passes over consecutive batches, each loss a token sum divided by the step's token count
// (Note [Loss normalisation] in trainer.cpp), so accumulation equals one big batch.
#pragma once

#include <functional>

#include "lib/runtime/step_engine.h"

namespace hetu::runtime {

// Σ-over-tokens loss of one micro-batch divided by `normalizer` (a scalar tensor).
using LossFn = std::function<Tensor(const Batch& batch, double normalizer)>;

class LocalEngine final : public StepEngine {
 public:
  LocalEngine(const nn::Module& model, LossFn loss, int64_t micro_batches, int64_t tokens_per_micro_batch);
  const std::vector<nn::NamedParameter>& parameters() const override { return params_; }
  double forward_backward(BatchSource& train) override;
  double grad_norm() override;
  double evaluate(BatchSource& val, int64_t batches) override;
  double tokens_per_step() const override { return static_cast<double>(micro_batches_ * tokens_per_micro_batch_); }

 private:
  const nn::Module& model_;
  LossFn loss_;
  int64_t micro_batches_;
  int64_t tokens_per_micro_batch_;
  std::vector<nn::NamedParameter> params_;
};

}  // namespace hetu::runtime
