// The single-device step: accumulate micro-batches, no communication.
#include "lib/runtime/local_engine.h"

#include "lib/autograd/engine.h"
#include "lib/autograd/grad_mode.h"
#include "lib/optim/adamw.h"
#include "lib/util/error.h"
#include "lib/util/step_timer.h"

namespace hetu::runtime {

LocalEngine::LocalEngine(const nn::Module& model, LossFn loss, int64_t micro_batches, int64_t tokens_per_micro_batch)
    : model_(model),
      loss_(std::move(loss)),
      micro_batches_(micro_batches),
      tokens_per_micro_batch_(tokens_per_micro_batch),
      params_(model.named_parameters()) {
  HT_CHECK(micro_batches_ >= 1 && tokens_per_micro_batch_ >= 1,
           "local engine: micro_batches and tokens_per_micro_batch must be >= 1");
}

double LocalEngine::forward_backward(BatchSource& train) {
  model_.zero_grad();
  double loss_sum = 0;
  for (int64_t micro = 0; micro < micro_batches_; ++micro) {
    const Batch batch = train.next();
    timing::Scope forward(timing::Phase::forward, "forward", timing::Track::compute, {{"mb", micro}, {"stage", 0}});
    const Tensor loss = loss_(batch, tokens_per_step());
    forward.end();
    timing::Scope backward(timing::Phase::backward, "backward", timing::Track::compute, {{"mb", micro}, {"stage", 0}});
    autograd::backward(loss);
    loss_sum += loss.item();
  }
  return loss_sum;
}

double LocalEngine::grad_norm() { return optim::grad_norm(params_); }

double LocalEngine::evaluate(BatchSource& val, int64_t batches) {
  autograd::NoGradGuard no_grad;
  double total = 0;
  for (int64_t i = 0; i < batches; ++i) {
    const Batch batch = val.next();
    total += loss_(batch, static_cast<double>(batch.targets.numel())).item();
  }
  return total / static_cast<double>(batches);
}

}  // namespace hetu::runtime
