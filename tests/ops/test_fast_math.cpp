// fast_exp and fast_tanh (lib/ops/cpu/fast_math.h) against std::exp / std::tanh in double,
// densely over their whole range, plus the edges: exact 0 below the range and for -inf,
// exact ±1 in tanh's saturation, and the double overloads equal to std::; max_of against the
// in-order std::max.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "lib/ops/cpu/fast_math.h"

using hetu::ops::cpu::fast_exp;
using hetu::ops::cpu::fast_tanh;

namespace {
constexpr double kUlp = 1.0 / (1 << 23);  // float's relative spacing at 1 (2^-23)
}  // namespace

TEST_CASE("fast_exp is within 2 ulp of exp from -87 to 88", "[fast_math]") {
  double worst = 0;
  for (int64_t i = 0; i <= 2000000; ++i) {
    const float x = static_cast<float>(-87.0 + 175.0 * static_cast<double>(i) / 2e6);
    const double expected = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::fabs(static_cast<double>(fast_exp(x)) - expected) / expected);
  }
  INFO("worst relative error " << worst);
  CHECK(worst <= 2 * kUlp);
  CHECK(fast_exp(0.0f) == 1.0f);
  CHECK(fast_exp(-87.5f) == 0.0f);
  CHECK(fast_exp(-1000.0f) == 0.0f);
  CHECK(fast_exp(-std::numeric_limits<float>::infinity()) == 0.0f);
  CHECK(fast_exp(0.5) == std::exp(0.5));  // double: std::exp itself
}

TEST_CASE("fast_tanh is within a few ulp of tanh and exactly ±1 when saturated", "[fast_math]") {
  double worst = 0;
  for (int64_t i = 0; i <= 2000000; ++i) {
    const float x = static_cast<float>(-10.0 + 20.0 * static_cast<double>(i) / 2e6);
    const double expected = std::tanh(static_cast<double>(x));
    // Relative to max(|tanh|, 2^-6): near 0 the absolute error is what GELU sees.
    worst = std::max(worst, std::fabs(static_cast<double>(fast_tanh(x)) - expected) /
                                std::max(std::fabs(expected), 1.0 / 64));
  }
  INFO("worst relative error " << worst);
  CHECK(worst <= 4 * kUlp);
  CHECK(fast_tanh(9.0f) == 1.0f);
  CHECK(fast_tanh(-20.0f) == -1.0f);
  CHECK(fast_tanh(0.0f) == 0.0f);
  CHECK(fast_tanh(1e-5f) == 1e-5f);
  CHECK(fast_tanh(0.5) == std::tanh(0.5));
}

TEST_CASE("max_of equals the in-order std::max, NaNs and -inf included", "[fast_math]") {
  // Every length up to three vector widths (the lane loop, its tail, both), values of both
  // signs with the maximum anywhere, NaNs skipped as std::max(m, x) skips them, all -inf.
  auto check = [](auto zero) {
    using T = decltype(zero);
    std::vector<T> x(53);
    for (size_t n = 0; n <= x.size(); ++n) {
      for (size_t peak = 0; peak < std::max<size_t>(n, 1); peak += 7) {
        for (size_t i = 0; i < n; ++i) x[i] = static_cast<T>(-100.0 + std::fmod(static_cast<double>(i) * 37.3, 90.0));
        if (n > 0) x[peak] = static_cast<T>(5.5);
        if (n > 3) x[3] = std::numeric_limits<T>::quiet_NaN();
        const T init = -std::numeric_limits<T>::infinity();
        T expected = init;
        for (size_t i = 0; i < n; ++i) expected = std::max(expected, x[i]);
        INFO("n " << n << " peak " << peak << " bytes " << sizeof(T));
        CHECK(hetu::ops::cpu::max_of(x.data(), static_cast<int64_t>(n), init) == expected);
      }
      std::fill(x.begin(), x.end(), -std::numeric_limits<T>::infinity());
      CHECK(hetu::ops::cpu::max_of(x.data(), static_cast<int64_t>(n), -std::numeric_limits<T>::infinity()) ==
            -std::numeric_limits<T>::infinity());
    }
  };
  check(0.0f);
  check(0.0);
}
