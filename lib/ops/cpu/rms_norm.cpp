// CPU kernels for RMS normalisation over the last dim: x is (N, C), weight (C), rstd (N).
//   forward:  rstd = 1/sqrt(mean(x²) + eps), out = x·rstd·w
//   backward: xhat = x·rstd, dnorm = grad·w
//             dx = rstd · (dnorm - xhat · mean(dnorm · xhat)),   dweight = Σ_rows grad · xhat
// Sums are accumulated in double; rows run in parallel.
#include "lib/ops/cpu/rms_norm.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace hetu::ops::cpu {

template <typename scalar_t>
void rms_norm_forward(scalar_t* out, scalar_t* rstd, const scalar_t* x, const scalar_t* weight, int64_t N, int64_t C,
                      double eps) {
#pragma omp parallel for
  for (int64_t n = 0; n < N; n++) {
    const scalar_t* x_n = x + n * C;
    scalar_t* out_n = out + n * C;
    double ss = 0.0;
    for (int64_t i = 0; i < C; i++) ss += static_cast<double>(x_n[i]) * static_cast<double>(x_n[i]);
    const double r = 1.0 / std::sqrt(ss / static_cast<double>(C) + eps);
    for (int64_t i = 0; i < C; i++) {
      out_n[i] = static_cast<scalar_t>(static_cast<double>(x_n[i]) * r * static_cast<double>(weight[i]));
    }
    rstd[n] = static_cast<scalar_t>(r);
  }
}

// See Note [Deterministic parameter gradients] in lib/ops/cpu/layer_norm.cpp.
namespace {
constexpr int64_t kMaxChunks = 64;
}  // namespace

template <typename scalar_t>
void rms_norm_backward(scalar_t* dx, scalar_t* dweight, const scalar_t* grad, const scalar_t* x, const scalar_t* weight,
                       const scalar_t* rstd, int64_t N, int64_t C) {
  const int64_t chunks = std::min(N, kMaxChunks);
  std::vector<double> partial(static_cast<size_t>(chunks * C), 0.0);  // per chunk: dweight
#pragma omp parallel for
  for (int64_t k = 0; k < chunks; k++) {
    double* dw_k = partial.data() + k * C;
    for (int64_t n = N * k / chunks; n < N * (k + 1) / chunks; n++) {
      const scalar_t* g_n = grad + n * C;
      const scalar_t* x_n = x + n * C;
      scalar_t* dx_n = dx + n * C;
      const double r = static_cast<double>(rstd[n]);
      double dnorm_xhat_mean = 0.0;
      for (int64_t i = 0; i < C; i++) {
        const double dnorm = static_cast<double>(g_n[i]) * static_cast<double>(weight[i]);
        dnorm_xhat_mean += dnorm * static_cast<double>(x_n[i]) * r;
      }
      dnorm_xhat_mean /= static_cast<double>(C);
      for (int64_t i = 0; i < C; i++) {
        const double g = static_cast<double>(g_n[i]);
        const double xhat = static_cast<double>(x_n[i]) * r;
        dx_n[i] = static_cast<scalar_t>((g * static_cast<double>(weight[i]) - xhat * dnorm_xhat_mean) * r);
        dw_k[i] += g * xhat;
      }
    }
  }
#pragma omp parallel for
  for (int64_t i = 0; i < C; i++) {
    double dw = 0.0;
    for (int64_t k = 0; k < chunks; k++) dw += partial[static_cast<size_t>(k * C + i)];
    dweight[i] = static_cast<scalar_t>(dw);
  }
}

#define HT_INSTANTIATE_RMS_NORM(T)                                                                      \
  template void rms_norm_forward<T>(T*, T*, const T*, const T*, int64_t, int64_t, double);             \
  template void rms_norm_backward<T>(T*, T*, const T*, const T*, const T*, const T*, int64_t, int64_t);
HT_INSTANTIATE_RMS_NORM(float)
HT_INSTANTIATE_RMS_NORM(double)
#undef HT_INSTANTIATE_RMS_NORM

}  // namespace hetu::ops::cpu
