// CPU kernels for layer normalisation over the last dim (llm.c's layernorm, in double):
// x is (N, C), weight and bias (C), mean and rstd (N). The variance is the biased one and is
// computed in two passes (mean first), so rows with a large offset keep their precision.
// Backward (xhat = (x - mean)·rstd, dnorm = grad·w):
//   dx = rstd · (dnorm - mean(dnorm) - xhat · mean(dnorm · xhat))
//   dweight = Σ_rows grad · xhat,   dbias = Σ_rows grad
// Row loops run with the CPU's widest vectors (run_isa, Note [Kernel ISA levels]).
#include "lib/ops/cpu/layer_norm.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "lib/ops/cpu/isa.h"

namespace hetu::ops::cpu {

namespace {

// One row n of the forward.
struct LayerNormRow {
  template <typename scalar_t>
  static void run(scalar_t* out, scalar_t* mean, scalar_t* rstd, const scalar_t* x, const scalar_t* weight,
                  const scalar_t* bias, int64_t n, int64_t C, double eps) {
    const scalar_t* x_n = x + n * C;
    scalar_t* out_n = out + n * C;
    double m = 0.0;
#pragma omp simd reduction(+ : m)
    for (int64_t i = 0; i < C; i++) m += static_cast<double>(x_n[i]);
    m /= static_cast<double>(C);
    double v = 0.0;
#pragma omp simd reduction(+ : v)
    for (int64_t i = 0; i < C; i++) {
      const double d = static_cast<double>(x_n[i]) - m;
      v += d * d;
    }
    v /= static_cast<double>(C);
    const double r = 1.0 / std::sqrt(v + eps);
#pragma omp simd
    for (int64_t i = 0; i < C; i++) {
      const double xhat = (static_cast<double>(x_n[i]) - m) * r;
      out_n[i] = static_cast<scalar_t>(xhat * static_cast<double>(weight[i]) + static_cast<double>(bias[i]));
    }
    mean[n] = static_cast<scalar_t>(m);
    rstd[n] = static_cast<scalar_t>(r);
  }
};

// Rows [n0, n1) of the backward: dx, and this chunk's dweight (dw_k) and dbias (db_k) sums.
struct LayerNormBackwardRows {
  template <typename scalar_t>
  static void run(scalar_t* dx, double* dw_k, double* db_k, const scalar_t* grad, const scalar_t* x,
                  const scalar_t* weight, const scalar_t* mean, const scalar_t* rstd, int64_t n0, int64_t n1,
                  int64_t C) {
    for (int64_t n = n0; n < n1; n++) {
      const scalar_t* g_n = grad + n * C;
      const scalar_t* x_n = x + n * C;
      scalar_t* dx_n = dx + n * C;
      const double m = static_cast<double>(mean[n]), r = static_cast<double>(rstd[n]);
      double dnorm_mean = 0.0, dnorm_xhat_mean = 0.0;
#pragma omp simd reduction(+ : dnorm_mean, dnorm_xhat_mean)
      for (int64_t i = 0; i < C; i++) {
        const double xhat = (static_cast<double>(x_n[i]) - m) * r;
        const double dnorm = static_cast<double>(g_n[i]) * static_cast<double>(weight[i]);
        dnorm_mean += dnorm;
        dnorm_xhat_mean += dnorm * xhat;
      }
      dnorm_mean /= static_cast<double>(C);
      dnorm_xhat_mean /= static_cast<double>(C);
#pragma omp simd
      for (int64_t i = 0; i < C; i++) {
        const double g = static_cast<double>(g_n[i]);
        const double xhat = (static_cast<double>(x_n[i]) - m) * r;
        const double dnorm = g * static_cast<double>(weight[i]);
        dx_n[i] = static_cast<scalar_t>((dnorm - dnorm_mean - xhat * dnorm_xhat_mean) * r);
        dw_k[i] += g * xhat;
        db_k[i] += g;
      }
    }
  }
};

// Note [Deterministic parameter gradients]: dweight and dbias sum over every row. The rows are
// cut into at most kMaxChunks chunks, fixed by N alone; each chunk sums its rows into its own
// double buffer, and the buffers are then added in chunk order. The result is the same bits
// whatever the thread count, and no two threads write the same element.
constexpr int64_t kMaxChunks = 64;

}  // namespace

template <typename scalar_t>
void layer_norm_forward(scalar_t* out, scalar_t* mean, scalar_t* rstd, const scalar_t* x, const scalar_t* weight,
                        const scalar_t* bias, int64_t N, int64_t C, double eps) {
#pragma omp parallel for
  for (int64_t n = 0; n < N; n++) run_isa<LayerNormRow>(out, mean, rstd, x, weight, bias, n, C, eps);
}

template <typename scalar_t>
void layer_norm_backward(scalar_t* dx, scalar_t* dweight, scalar_t* dbias, const scalar_t* grad, const scalar_t* x,
                         const scalar_t* weight, const scalar_t* mean, const scalar_t* rstd, int64_t N, int64_t C) {
  const int64_t chunks = std::min(N, kMaxChunks);
  // Per chunk: dweight, dbias. Each chunk zeroes its own sums (in its thread's cache).
  const std::unique_ptr<double[]> partial(new double[static_cast<size_t>(chunks * 2 * C)]);
#pragma omp parallel for
  for (int64_t k = 0; k < chunks; k++) {
    double* dw_k = partial.get() + k * 2 * C;
    std::fill(dw_k, dw_k + 2 * C, 0.0);
    run_isa<LayerNormBackwardRows>(dx, dw_k, dw_k + C, grad, x, weight, mean, rstd, N * k / chunks,
                                   N * (k + 1) / chunks, C);
  }
  // The chunk sums in chunk order, a whole row of them at a time (rows are contiguous).
  std::vector<double> sums(static_cast<size_t>(2 * C), 0.0);
  for (int64_t k = 0; k < chunks; k++) {
    const double* dw_k = partial.get() + k * 2 * C;
#pragma omp simd
    for (int64_t i = 0; i < 2 * C; i++) sums[static_cast<size_t>(i)] += dw_k[i];
  }
  for (int64_t i = 0; i < C; i++) {
    dweight[i] = static_cast<scalar_t>(sums[static_cast<size_t>(i)]);
    dbias[i] = static_cast<scalar_t>(sums[static_cast<size_t>(C + i)]);
  }
}

#define HT_INSTANTIATE_LAYER_NORM(T)                                                                        \
  template void layer_norm_forward<T>(T*, T*, T*, const T*, const T*, const T*, int64_t, int64_t, double); \
  template void layer_norm_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*, const T*, int64_t, \
                                       int64_t);
HT_INSTANTIATE_LAYER_NORM(float)
HT_INSTANTIATE_LAYER_NORM(double)
#undef HT_INSTANTIATE_LAYER_NORM

}  // namespace hetu::ops::cpu
