// The dynamic loss scale of fp16 training (training.precision = "fp16"): f16 gradients of a
// small loss underflow, so the loss is multiplied by the scale before backward (the engines'
// StepEngine::set_loss_scale) and the f32 master gradients are divided by it afterwards, in
// one pass over each gradient that also looks for inf/nan (ops::unscale_and_check_). A step
// whose gradients overflowed on any rank is skipped on every rank (the Trainer reduces the
// flag) and the scale halves, never below `min`; after `window` clean steps in a row it
// doubles. The scale and its counters go into every snapshot's metadata, so a resumed run
// continues with the same scale.
//
//   LossScaler scaler({.init = 65536, .window = 1000});
//   engine.set_loss_scale(scaler.scale());  engine.forward_backward(batches);
//   const bool overflow = engine.any_rank(scaler.unscale(engine.optimizer_parameters()));
//   scaler.update(overflow);  // then the optimizer step unless `overflow`
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lib/nn/module.h"

namespace hetu::optim {

struct LossScaleConfig {
  double init = 65536;   // 2^16
  int64_t window = 1000;  // clean steps after which the scale doubles
  double min = 1;
};

class LossScaler {
 public:
  explicit LossScaler(LossScaleConfig config);

  double scale() const { return scale_; }
  int64_t clean_steps() const { return clean_steps_; }    // clean steps since the scale last changed
  int64_t skipped_steps() const { return skipped_steps_; }  // steps skipped for inf/nan over the run

  // Divides every defined gradient of `params` by the scale in place; true when any element
  // of them is inf or nan (on this rank).
  bool unscale(const std::vector<nn::NamedParameter>& params) const;
  // After the step's overflow flag is known on every rank: an overflow halves the scale (not
  // below min) and counts a skipped step; a clean step counts towards the window, and the
  // window's last doubles the scale.
  void update(bool overflow);

  // The scale and its counters as snapshot metadata, and back ("loss_scale",
  // "loss_scale_clean_steps", "loss_scale_skipped_steps"). restore leaves the state as it is
  // when the metadata has none of them (a checkpoint of an fp32 run).
  void save(std::map<std::string, std::string>& metadata) const;
  void restore(const std::map<std::string, std::string>& metadata);

 private:
  LossScaleConfig config_;
  double scale_;
  int64_t clean_steps_ = 0;
  int64_t skipped_steps_ = 0;
};

// Test hook: HETU_TEST_FP16_OVERFLOW_STEP=k makes step k (1-based) of an fp16 run overflow:
// the Trainer writes inf into the first element of rank 0's first gradient before the
// unscale. 0 when unset.
int64_t test_overflow_step();

}  // namespace hetu::optim
