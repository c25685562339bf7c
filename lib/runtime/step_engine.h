// StepEngine: what the Trainer drives once per optimizer step (ParallelEngine: any parallel
// layout, a single device being the one-device layout; BucketedEngine: a layout per batch,
// bucketed_engine.h). An engine owns how
// the step's batch is read and cut, how gradients are computed and summed across ranks, and
// what "the" loss and gradient norm are; the Trainer owns the schedule, clipping, AdamW,
// logging, evaluation cadence, checkpoints and stop requests.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lib/nn/module.h"
#include "lib/runtime/training_io.h"

namespace hetu::runtime {

class StepEngine {
 public:
  virtual ~StepEngine() = default;
  // The tensors this rank trains (local shards), named as in the whole model.
  virtual const std::vector<nn::NamedParameter>& parameters() const = 0;
  // The tensors AdamW updates, named as the parameters, their gradients set by
  // forward_backward: the parameters, or under ZeRO-1 the f32 master shards of the state
  // layout (parallel_engine.h) for the parameters that have them.
  virtual const std::vector<nn::NamedParameter>& optimizer_parameters() const { return parameters(); }
  // After AdamW's step: refresh the parameters from the tensors it updated (ZeRO-1's
  // all-gather). Every rank calls it.
  virtual void refresh_parameters() {}
  // After something wrote the parameters (resume, init_from, a switch): bring the tensors
  // AdamW updates back in line with them. Every rank calls it.
  virtual void load_optimizer_parameters() {}
  // Reads this step's batch from `train`, runs forward and backward, and leaves each
  // parameter's gradient summed over every rank that holds it. Returns the step's loss
  // (mean over the global batch's tokens), the same on every rank.
  virtual double forward_backward(BatchSource& train) = 0;
  // L2 norm of the whole model's gradient, each logical element counted once; same on every rank.
  virtual double grad_norm() = 0;
  // Mean loss over `batches` validation batches; same on every rank.
  virtual double evaluate(BatchSource& val, int64_t batches) = 0;
  // True on every rank when `flag` is true on any rank.
  virtual bool any_rank(bool flag) { return flag; }
  // Tokens of one optimizer step, all ranks together.
  virtual double tokens_per_step() const = 0;
  // fp16's loss scale (lib/optim/loss_scaler.h): forward_backward multiplies the loss by it
  // before backward, so the gradients it leaves are `scale` times the true ones; the loss it
  // returns is the true one. 1 unless set.
  void set_loss_scale(double scale) { loss_scale_ = scale; }

 protected:
  double loss_scale_ = 1;
};

}  // namespace hetu::runtime
