// IdleEngine: zeros into the world's reductions.
#include "lib/runtime/idle_engine.h"

#include <cmath>

#include "lib/runtime/world_sum.h"
#include "lib/util/step_timer.h"

namespace hetu::runtime {

double IdleEngine::forward_backward(BatchSource& train) {
  train.next();  // keeps the data position with the other ranks'
  timing::Scope scope(timing::Phase::grad_sync, "grad_sync");
  return sum_over_world(comm_, 0.0) / loss_scale_;  // the others' losses are scaled (Note [Loss scale])
}

double IdleEngine::grad_norm() { return std::sqrt(sum_over_world(comm_, 0.0)); }

double IdleEngine::evaluate(BatchSource&, int64_t batches) {
  return sum_over_world(comm_, 0.0) / static_cast<double>(batches);
}

bool IdleEngine::any_rank(bool flag) { return sum_over_world(comm_, flag ? 1.0 : 0.0) > 0; }

}  // namespace hetu::runtime
