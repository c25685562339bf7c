// Learning-rate schedules: linear warm-up from 0 over `warmup_steps`, then constant, linear
// or cosine decay from the peak to min_lr_ratio · peak at the last step.
//
//   LrSchedule s{.peak = 6e-4, .warmup_steps = 100, .total_steps = 1000, .decay = LrDecayKind::cosine,
//                .min_lr_ratio = 0.1};
//   s.at(0) == 6e-6 (1/100 of the peak), s.at(99) == 6e-4, s.at(999) == 6e-5
#pragma once

#include <cstdint>

namespace hetu::optim {

enum class LrDecayKind { constant, linear, cosine };

struct LrSchedule {
  double peak = 1e-3;
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;
  LrDecayKind decay = LrDecayKind::cosine;
  double min_lr_ratio = 0.1;

  double at(int64_t step) const;  // step is 0-based
};

}  // namespace hetu::optim
