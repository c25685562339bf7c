// CPU kernels for GELU (tanh approximation) and SiLU, forward and backward, over flat
// contiguous buffers of n elements. Elementwise and independent, so large buffers are split
// across OpenMP threads; results do not depend on the thread count.
#include "lib/ops/cpu/activation.h"

#include <cmath>

namespace hetu::ops::cpu {
namespace {

constexpr int64_t kParallelGrain = 1 << 14;  // below this, threads cost more than they save

template <typename scalar_t> scalar_t sigmoid(scalar_t x) { return scalar_t(1) / (scalar_t(1) + std::exp(-x)); }

}  // namespace

template <typename scalar_t> void gelu_forward(scalar_t* out, const scalar_t* x, int64_t n) {
  const scalar_t k = static_cast<scalar_t>(0.79788456080286535588);  // √(2/π)
  const scalar_t c = static_cast<scalar_t>(0.044715);
#pragma omp parallel for if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    const scalar_t xi = x[i];
    out[i] = scalar_t(0.5) * xi * (scalar_t(1) + std::tanh(k * (xi + c * xi * xi * xi)));
  }
}

// d/dx gelu = 0.5·(1 + t) + 0.5·x·(1 − t²)·√(2/π)·(1 + 3·0.044715·x²), t = tanh(inner).
template <typename scalar_t> void gelu_backward(scalar_t* dx, const scalar_t* grad, const scalar_t* x, int64_t n) {
  const scalar_t k = static_cast<scalar_t>(0.79788456080286535588);
  const scalar_t c = static_cast<scalar_t>(0.044715);
#pragma omp parallel for if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    const scalar_t xi = x[i];
    const scalar_t t = std::tanh(k * (xi + c * xi * xi * xi));
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
