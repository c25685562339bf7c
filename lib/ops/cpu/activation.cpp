// CPU kernels for GELU (tanh approximation) and SiLU, forward and backward, over flat
// contiguous buffers of n elements. Elementwise and independent, so large buffers are split
// across OpenMP threads; results do not depend on the thread count. GELU's loops run with the
// CPU's widest vectors (run_isa, Note [Kernel ISA levels]). gelu_backward_column_sums is the
// backward of a linear layer + GELU (lib/ops/linear_gelu.cpp): dx and its column sums (the
// layer's bias gradient) in one pass, instead of gelu_backward and a second pass to sum.
#include "lib/ops/cpu/activation.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "lib/ops/cpu/fast_math.h"
#include "lib/ops/cpu/isa.h"

namespace hetu::ops::cpu {
namespace {

constexpr int64_t kParallelGrain = 1 << 14;  // below this, threads cost more than they save

template <typename scalar_t> scalar_t sigmoid(scalar_t x) { return scalar_t(1) / (scalar_t(1) + std::exp(-x)); }

constexpr double kGeluK = 0.79788456080286535588;  // √(2/π)
constexpr double kGeluC = 0.044715;

struct GeluForward {
  template <typename scalar_t> static void run(scalar_t* out, const scalar_t* x, int64_t n) {
    const scalar_t k = static_cast<scalar_t>(kGeluK), c = static_cast<scalar_t>(kGeluC);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      const scalar_t xi = x[i];
      out[i] = scalar_t(0.5) * xi * (scalar_t(1) + fast_tanh(k * (xi + c * xi * xi * xi)));
    }
  }
};

// d/dx gelu = 0.5·(1 + t) + 0.5·x·(1 − t²)·√(2/π)·(1 + 3·0.044715·x²), t = tanh(inner).
template <typename scalar_t> inline scalar_t gelu_derivative(scalar_t xi) {
  const scalar_t k = static_cast<scalar_t>(kGeluK), c = static_cast<scalar_t>(kGeluC);
  const scalar_t t = fast_tanh(k * (xi + c * xi * xi * xi));
  return scalar_t(0.5) * (scalar_t(1) + t) +
         scalar_t(0.5) * xi * (scalar_t(1) - t * t) * k * (scalar_t(1) + scalar_t(3) * c * xi * xi);
}

struct GeluBackward {
  template <typename scalar_t> static void run(scalar_t* dx, const scalar_t* grad, const scalar_t* x, int64_t n) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) dx[i] = grad[i] * gelu_derivative(x[i]);
  }
};

// GeluBackward over `rows` contiguous rows of `cols`, adding each written dx to its column's
// double accumulator (acc, cols entries, zeroed here) while it is still in a register.
struct GeluBackwardColumnSums {
  template <typename scalar_t>
  static void run(scalar_t* dx, double* acc, const scalar_t* grad, const scalar_t* x, int64_t rows, int64_t cols) {
    std::fill(acc, acc + cols, 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      scalar_t* d = dx + r * cols;
      const scalar_t* g = grad + r * cols;
      const scalar_t* xr = x + r * cols;
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) {
        const scalar_t v = g[c] * gelu_derivative(xr[c]);
        d[c] = v;
        acc[c] += static_cast<double>(v);
      }
    }
  }
};

// Rows per partial column sum in gelu_backward_column_sums: fixed, so the sums' bits do not
// depend on the thread count; 128 rows of partial sums per column stay few (8 at 1,024 rows).
constexpr int64_t kSumRowChunk = 128;

// fn(begin, end) over [0, n) in blocks of kParallelGrain, split across threads when n is large.
template <typename Fn> void for_blocks(int64_t n, Fn fn) {
  const int64_t blocks = (n + kParallelGrain - 1) / kParallelGrain;
#pragma omp parallel for schedule(static) if (blocks > 1)
  for (int64_t b = 0; b < blocks; ++b) fn(b * kParallelGrain, std::min(n, (b + 1) * kParallelGrain));
}

}  // namespace

template <typename scalar_t> void gelu_forward(scalar_t* out, const scalar_t* x, int64_t n) {
  for_blocks(n, [&](int64_t begin, int64_t end) { run_isa<GeluForward>(out + begin, x + begin, end - begin); });
}

template <typename scalar_t> void gelu_backward(scalar_t* dx, const scalar_t* grad, const scalar_t* x, int64_t n) {
  for_blocks(n, [&](int64_t begin, int64_t end) {
    run_isa<GeluBackward>(dx + begin, grad + begin, x + begin, end - begin);
  });
}

template <typename scalar_t>
void gelu_backward_column_sums(scalar_t* dx, scalar_t* column_sums, const scalar_t* grad, const scalar_t* x,
                               int64_t rows, int64_t cols) {
  const int64_t chunks = (rows + kSumRowChunk - 1) / kSumRowChunk;
  std::vector<double> partial(static_cast<size_t>(std::max<int64_t>(chunks, 1) * cols), 0.0);
#pragma omp parallel for schedule(static) if (chunks > 1 && rows * cols > kParallelGrain)
  for (int64_t ch = 0; ch < chunks; ++ch) {
    const int64_t r0 = ch * kSumRowChunk, n = std::min(kSumRowChunk, rows - r0);
    run_isa<GeluBackwardColumnSums>(dx + r0 * cols, partial.data() + ch * cols, grad + r0 * cols, x + r0 * cols, n,
                                    cols);
  }
  for (int64_t ch = 1; ch < chunks; ++ch) {  // chunk order: the same sum at any thread count
    const double* part = partial.data() + ch * cols;
    for (int64_t c = 0; c < cols; ++c) partial[static_cast<size_t>(c)] += part[c];
  }
  for (int64_t c = 0; c < cols; ++c) column_sums[c] = static_cast<scalar_t>(partial[static_cast<size_t>(c)]);
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
  template void gelu_backward_column_sums<T>(T*, T*, const T*, const T*, int64_t, int64_t); \
  template void silu_forward<T>(T*, const T*, int64_t);                     \
  template void silu_backward<T>(T*, const T*, const T*, int64_t);
HT_INSTANTIATE(float)
HT_INSTANTIATE(double)
#undef HT_INSTANTIATE

}  // namespace hetu::ops::cpu
