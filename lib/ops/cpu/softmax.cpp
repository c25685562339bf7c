// CPU kernels for softmax and log_softmax over the last dim: x, out, grad, y, dx are (N, C),
// contiguous. Numerically stable: the row max is subtracted before exp, so rows like
// [1000, 0, -1000] stay finite. Row sums are accumulated in double; rows run in parallel.
#include "lib/ops/cpu/softmax.h"

#include <cmath>
#include <limits>

namespace hetu::ops::cpu {

namespace {

// Max of a row, in double (-inf for an empty row).
template <typename scalar_t> double row_max(const scalar_t* x, int64_t C) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < C; i++) m = std::fmax(m, static_cast<double>(x[i]));
  return m;
}

// sum(exp(x - m)) over a row, in double.
template <typename scalar_t> double row_sum_exp(const scalar_t* x, int64_t C, double m) {
  double s = 0.0;
  for (int64_t i = 0; i < C; i++) s += std::exp(static_cast<double>(x[i]) - m);
  return s;
}

}  // namespace

template <typename scalar_t> void softmax_forward(scalar_t* out, const scalar_t* x, int64_t N, int64_t C) {
#pragma omp parallel for
  for (int64_t n = 0; n < N; n++) {
    const scalar_t* x_n = x + n * C;
    scalar_t* out_n = out + n * C;
    const double m = row_max(x_n, C);
    const double inv_sum = 1.0 / row_sum_exp(x_n, C, m);
    for (int64_t i = 0; i < C; i++) {
      out_n[i] = static_cast<scalar_t>(std::exp(static_cast<double>(x_n[i]) - m) * inv_sum);
    }
  }
}

template <typename scalar_t>
void softmax_backward(scalar_t* dx, const scalar_t* grad, const scalar_t* y, int64_t N, int64_t C) {
#pragma omp parallel for
  for (int64_t n = 0; n < N; n++) {
    const scalar_t* g_n = grad + n * C;
    const scalar_t* y_n = y + n * C;
    scalar_t* dx_n = dx + n * C;
    double dot = 0.0;  // sum(grad · y)
    for (int64_t i = 0; i < C; i++) dot += static_cast<double>(g_n[i]) * static_cast<double>(y_n[i]);
    for (int64_t i = 0; i < C; i++) {
      dx_n[i] = static_cast<scalar_t>(static_cast<double>(y_n[i]) * (static_cast<double>(g_n[i]) - dot));
    }
  }
}

template <typename scalar_t> void log_softmax_forward(scalar_t* out, const scalar_t* x, int64_t N, int64_t C) {
#pragma omp parallel for
  for (int64_t n = 0; n < N; n++) {
    const scalar_t* x_n = x + n * C;
    scalar_t* out_n = out + n * C;
    const double m = row_max(x_n, C);
    // (x - m) - log Σ exp(x - m), in this order: m + log(...) would round away the log for |m| ~ 1e30.
    const double log_sum = std::log(row_sum_exp(x_n, C, m));
    for (int64_t i = 0; i < C; i++) out_n[i] = static_cast<scalar_t>((static_cast<double>(x_n[i]) - m) - log_sum);
  }
}

template <typename scalar_t>
void log_softmax_backward(scalar_t* dx, const scalar_t* grad, const scalar_t* y, int64_t N, int64_t C) {
#pragma omp parallel for
  for (int64_t n = 0; n < N; n++) {
    const scalar_t* g_n = grad + n * C;
    const scalar_t* y_n = y + n * C;
    scalar_t* dx_n = dx + n * C;
    double g_sum = 0.0;
    for (int64_t i = 0; i < C; i++) g_sum += static_cast<double>(g_n[i]);
    for (int64_t i = 0; i < C; i++) {
      dx_n[i] = static_cast<scalar_t>(static_cast<double>(g_n[i]) - std::exp(static_cast<double>(y_n[i])) * g_sum);
    }
  }
}

#define HT_INSTANTIATE_SOFTMAX(T)                                                                   \
  template void softmax_forward<T>(T*, const T*, int64_t, int64_t);                                 \
  template void softmax_backward<T>(T*, const T*, const T*, int64_t, int64_t);                      \
  template void log_softmax_forward<T>(T*, const T*, int64_t, int64_t);                             \
  template void log_softmax_backward<T>(T*, const T*, const T*, int64_t, int64_t);
HT_INSTANTIATE_SOFTMAX(float)
HT_INSTANTIATE_SOFTMAX(double)
#undef HT_INSTANTIATE_SOFTMAX

}  // namespace hetu::ops::cpu
