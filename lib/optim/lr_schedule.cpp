// Learning-rate schedule.
#include "lib/optim/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace hetu::optim {

double LrSchedule::at(int64_t step) const {
  if (step < warmup_steps) return peak * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
  if (decay == LrDecayKind::constant) return peak;
  const int64_t decay_steps = std::max<int64_t>(1, total_steps - warmup_steps - 1);
  const double progress = std::clamp(static_cast<double>(step - warmup_steps) / static_cast<double>(decay_steps), 0.0, 1.0);
  const double floor = min_lr_ratio * peak;
  const double shape = decay == LrDecayKind::linear ? 1.0 - progress : 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
  return floor + (peak - floor) * shape;
}

}  // namespace hetu::optim
