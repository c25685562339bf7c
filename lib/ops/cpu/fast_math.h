// Vectorisable float approximations of exp and tanh for the CPU kernels: inline, branch-free
// (selects only), so loops over them vectorise (with run_isa, at the CPU's widest vectors);
// and max_of, a max that vectorises.
// The double overloads are std::exp / std::tanh, so templates over scalar_t keep double exact.
// tests/ops/test_fast_math.cpp checks both against std:: in double over their whole range.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace hetu::ops::cpu {

// Note [Fast float tanh]: libm's tanhf is a function call per element and dominated GELU's
// cost in training profiles. For float, a 13/6 odd rational approximation (the coefficients
// Eigen uses for its vectorised tanh) is accurate to a few ulp on [-8, 8] and returns exactly
// ±1 beyond (as tanhf does past 9; tanh(8) is within 2.3e-7 of 1), and vectorises.
inline float fast_tanh(float x) {
  constexpr float kClamp = 7.99881172180175781f;
  const float c = std::min(std::max(x, -kClamp), kClamp);
  const float c2 = c * c;
  float p = -2.76076847742355e-16f;
  p = p * c2 + 2.00018790482477e-13f;
  p = p * c2 + -8.60467152213735e-11f;
  p = p * c2 + 5.12229709037114e-08f;
  p = p * c2 + 1.48572235717979e-05f;
  p = p * c2 + 6.37261928875436e-04f;
  p = p * c2 + 4.89352455891786e-03f;
  p = p * c;
  float q = 1.19825839466702e-06f;
  q = q * c2 + 1.18534705686654e-04f;
  q = q * c2 + 2.26843463243900e-03f;
  q = q * c2 + 4.89352518554385e-03f;
  const float a = std::fabs(x);
  return a < 0.0004f ? x : (a >= kClamp ? std::copysign(1.0f, x) : p / q);  // exact ±1 in saturation
}
inline double fast_tanh(double x) { return std::tanh(x); }

// Note [Fast float exp]: the softmax inside CPU attention exponentiates every visible score;
// libm's expf is a call per element (a third of the attention kernel's own time at T = 256).
// e^x = 2^n · e^r with n = round(x / ln 2) and r = x - n·ln 2 in [-ln 2 / 2, ln 2 / 2] (ln 2 in
// two parts, so r is exact), e^r by Cephes' degree-7 polynomial, 2^n built in the exponent
// bits. Within 1.5 ulp of e^x for x in [-87, 88]; 0 below -87 (e^-87 is 1.6e-38, at the edge
// of the normal floats) and for -inf; +inf and NaN are not expected (scores are finite).
inline float fast_exp(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  constexpr float kRound = 12582912.0f;  // 1.5·2^23: (y + kRound) - kRound rounds y to an integer
  const float xc = std::min(std::max(x, -87.0f), 88.0f);
  const float n = (xc * kLog2e + kRound) - kRound;
  const float r = (xc - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  const float two_n = std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
  return x < -87.0f ? 0.0f : p * two_n;
}
inline double fast_exp(double x) { return std::exp(x); }

// max(init, x[0], ..., x[n - 1]) as std::max over them in order would give it (NaNs skipped
// alike: std::max(m, x) = m < x ? x : m, per lane here). An `omp simd reduction(max)` loop
// stays scalar without -ffinite-math-only (GCC 12: one vmaxss per element, 40% of the fused
// LM head's statistics pass); kLanes independent running maxima vectorise. Only the sign of a
// zero maximum can differ from the in-order max (max(-0, +0) depends on the order).
template <typename T> [[gnu::always_inline]] inline T max_of(const T* x, int64_t n, T init) {
  constexpr int64_t kLanes = 64 / sizeof(T);  // one AVX-512 register (two AVX2 registers)
  int64_t i = 0;
  if (n >= kLanes) {
    T lanes[kLanes];
    std::fill(lanes, lanes + kLanes, init);
    for (; i + kLanes <= n; i += kLanes) {
#pragma omp simd
      for (int64_t l = 0; l < kLanes; ++l) lanes[l] = lanes[l] < x[i + l] ? x[i + l] : lanes[l];
    }
    for (T lane : lanes) init = std::max(init, lane);
  }
  for (; i < n; ++i) init = std::max(init, x[i]);
  return init;
}

}  // namespace hetu::ops::cpu
