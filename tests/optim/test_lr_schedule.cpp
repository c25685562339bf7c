// Learning-rate schedules against closed-form values: linear warm-up (step s of W gives
// peak·(s+1)/W), then constant, linear or cosine decay over the steps W..T-1 to
// min_lr_ratio·peak at the last step, and the floor past the end.
#include <catch2/catch.hpp>

#include <cmath>
#include <numbers>

#include "lib/optim/lr_schedule.h"

using hetu::optim::LrDecayKind;
using hetu::optim::LrSchedule;

namespace {

// peak 1e-3, 4 warm-up steps, 13 steps in all: the decay runs over steps 4..12 (progress
// (s - 4) / 8), so step 8 is its midpoint; the floor is 1e-4.
LrSchedule schedule(LrDecayKind decay) { return LrSchedule{1e-3, 4, 13, decay, 0.1}; }

}  // namespace

TEST_CASE("lr warm-up rises linearly to the peak", "[optim]") {
  for (LrDecayKind decay : {LrDecayKind::constant, LrDecayKind::linear, LrDecayKind::cosine}) {
    const LrSchedule s = schedule(decay);
    CHECK(s.at(0) == Approx(2.5e-4).epsilon(1e-12));
    CHECK(s.at(1) == Approx(5.0e-4).epsilon(1e-12));
    CHECK(s.at(2) == Approx(7.5e-4).epsilon(1e-12));
    CHECK(s.at(3) == Approx(1.0e-3).epsilon(1e-12));
    CHECK(s.at(4) == Approx(1.0e-3).epsilon(1e-12));  // the first decay step is still the peak
  }
  const LrSchedule none{1e-3, 0, 10, LrDecayKind::cosine, 0.1};
  CHECK(none.at(0) == Approx(1e-3).epsilon(1e-12));
}

TEST_CASE("lr constant decay stays at the peak", "[optim]") {
  const LrSchedule s = schedule(LrDecayKind::constant);
  for (int64_t step : {4, 5, 8, 12, 40}) CHECK(s.at(step) == Approx(1e-3).epsilon(1e-12));
}

TEST_CASE("lr linear decay falls in a straight line to the floor", "[optim]") {
  const LrSchedule s = schedule(LrDecayKind::linear);
  CHECK(s.at(6) == Approx(7.75e-4).epsilon(1e-12));   // 1e-4 + 9e-4 · (1 - 2/8)
  CHECK(s.at(8) == Approx(5.5e-4).epsilon(1e-12));    // the midpoint
  CHECK(s.at(11) == Approx(2.125e-4).epsilon(1e-12)); // 1e-4 + 9e-4 · 1/8
  CHECK(s.at(12) == Approx(1e-4).epsilon(1e-12));     // the last step ends on the floor
  CHECK(s.at(30) == Approx(1e-4).epsilon(1e-12));     // and stays there
}

TEST_CASE("lr cosine decay follows half a cosine to the floor", "[optim]") {
  const LrSchedule s = schedule(LrDecayKind::cosine);
  CHECK(s.at(6) == Approx(1e-4 + 9e-4 * 0.5 * (1 + std::sqrt(0.5))).epsilon(1e-12));  // cos(pi/4)
  CHECK(s.at(8) == Approx(5.5e-4).epsilon(1e-12));
  CHECK(s.at(10) == Approx(1e-4 + 9e-4 * 0.5 * (1 - std::sqrt(0.5))).epsilon(1e-12));  // cos(3pi/4)
  CHECK(s.at(12) == Approx(1e-4).epsilon(1e-12));
  CHECK(s.at(30) == Approx(1e-4).epsilon(1e-12));
  // Every step against the formula written out: peak 6e-4, 10 warm-up steps of 100, floor 0.
  const LrSchedule t{6e-4, 10, 100, LrDecayKind::cosine, 0.0};
  for (int64_t step = 10; step < 100; ++step) {
    const double expected = 6e-4 * 0.5 * (1 + std::cos(std::numbers::pi * static_cast<double>(step - 10) / 89.0));
    INFO("step " << step);
    CHECK(t.at(step) == Approx(expected).epsilon(1e-12).margin(1e-18));
  }
}
