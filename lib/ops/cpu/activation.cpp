// CPU kernels for GELU (tanh approximation) and SiLU, forward and backward, over flat
// contiguous buffers of n elements. Elementwise and independent, so large buffers are split
// across OpenMP threads; results do not depend on the thread count.
#include "lib/ops/cpu/activation.h"

#include <algorithm>
#include <cmath>

namespace hetu::ops::cpu {
namespace {

constexpr int64_t kParallelGrain = 1 << 14;  // below this, threads cost more than they save

template <typename scalar_t> scalar_t sigmoid(scalar_t x) { return scalar_t(1) / (scalar_t(1) + std::exp(-x)); }

// Note [Fast float tanh]: libm's tanhf is a function call per element and dominated GELU's
// cost in training profiles. For float, a 13/6 odd rational approximation (the coefficients
// Eigen uses for its vectorised tanh) is accurate to a few ulp on [-8, 8] and returns exactly
// ±1 beyond (as tanhf does past 9; tanh(8) is within 2.3e-7 of 1), and vectorises. double keeps std::tanh.
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

}  // namespace

template <typename scalar_t> void gelu_forward(scalar_t* out, const scalar_t* x, int64_t n) {
  const scalar_t k = static_cast<scalar_t>(0.79788456080286535588);  // √(2/π)
  const scalar_t c = static_cast<scalar_t>(0.044715);
#pragma omp parallel for simd if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    const scalar_t xi = x[i];
    out[i] = scalar_t(0.5) * xi * (scalar_t(1) + fast_tanh(k * (xi + c * xi * xi * xi)));
  }
}

// d/dx gelu = 0.5·(1 + t) + 0.5·x·(1 − t²)·√(2/π)·(1 + 3·0.044715·x²), t = tanh(inner).
template <typename scalar_t> void gelu_backward(scalar_t* dx, const scalar_t* grad, const scalar_t* x, int64_t n) {
  const scalar_t k = static_cast<scalar_t>(0.79788456080286535588);
  const scalar_t c = static_cast<scalar_t>(0.044715);
#pragma omp parallel for simd if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    const scalar_t xi = x[i];
    const scalar_t t = fast_tanh(k * (xi + c * xi * xi * xi));
    const scalar_t local = scalar_t(0.5) * (scalar_t(1) + t) +
                           scalar_t(0.5) * xi * (scalar_t(1) - t * t) * k * (scalar_t(1) + scalar_t(3) * c * xi * xi);
    dx[i] = grad[i] * local;
  }
}

template <typename scalar_t> void silu_forward(scalar_t* out, const scalar_t* x, int64_t n) {
#pragma omp parallel for if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * sigmoid(x[i]);
}

// d/dx silu = σ(x)·(1 + x·(1 − σ(x)))
template <typename scalar_t> void silu_backward(scalar_t* dx, const scalar_t* grad, const scalar_t* x, int64_t n) {
#pragma omp parallel for if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    const scalar_t s = sigmoid(x[i]);
    dx[i] = grad[i] * s * (scalar_t(1) + x[i] * (scalar_t(1) - s));
  }
}

#define HT_INSTANTIATE(T)                                                   \
  template void gelu_forward<T>(T*, const T*, int64_t);                     \
  template void gelu_backward<T>(T*, const T*, const T*, int64_t);          \
  template void silu_forward<T>(T*, const T*, int64_t);                     \
  template void silu_backward<T>(T*, const T*, const T*, int64_t);
HT_INSTANTIATE(float)
HT_INSTANTIATE(double)
#undef HT_INSTANTIATE

}  // namespace hetu::ops::cpu
