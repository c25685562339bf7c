// GELU (tanh approximation) and its derivative in double, written out from the formula: the
// reference of the activation tests and of the fused linear + GELU tests.
#pragma once

#include <cmath>

namespace hetu::test {

constexpr double kSqrt2OverPi = 0.7978845608028654;  // √(2/π)

inline double gelu_ref(double x) { return 0.5 * x * (1 + std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x))); }
inline double gelu_grad_ref(double x) {
  const double t = std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * kSqrt2OverPi * (1 + 3 * 0.044715 * x * x);
}

}  // namespace hetu::test
