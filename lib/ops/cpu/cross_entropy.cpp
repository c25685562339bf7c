// CPU kernels for cross-entropy over V classes: logits is (N, V), targets (N).
//   forward:  loss = Σ_n [target_n != ignore] (log S_n - (logits[n, target_n] - m_n)),
//             m_n = max_v logits[n, v],  S_n = Σ_v exp(logits[n, v] - m_n)   (stable for any logits)
//   backward: dlogits[n, v] = scale · (exp(logits[n, v] - m_n) / S_n - [v == target_n])
// Targets are validated serially first (errors cannot leave an OpenMP region); rows then run
// in parallel. Per-row losses are summed in row order, so the loss does not depend on threads.
// The vocabulary-shard kernels (cross_entropy_shard_*) give the per-row pieces of the same
// formulas over a block of columns; lib/nn/parallel_cross_entropy.cpp combines the blocks.
#include "lib/ops/cpu/cross_entropy.h"

#include <cmath>
#include <limits>
#include <vector>

#include "lib/util/error.h"

namespace hetu::ops::cpu {

namespace {

// The row max m (in the logits' type) and Σ exp(x - m) (exp in the logits' type, summed in
// double). Callers use x - m and log of the sum, never m + log(sum), which would round the
// log away for |m| ~ 1e30. With `exps`, the exponentials are also written there (the
// backward then scales them instead of computing them a second time).
struct RowExp {
  double max, sum;
};
template <typename scalar_t> RowExp row_exp(const scalar_t* x, int64_t V, scalar_t* exps = nullptr) {
  scalar_t m = -std::numeric_limits<scalar_t>::infinity();
  for (int64_t v = 0; v < V; v++) m = x[v] > m || std::isnan(x[v]) ? x[v] : m;
  double s = 0.0;
  for (int64_t v = 0; v < V; v++) {
    const scalar_t e = std::exp(x[v] - m);
    if (exps != nullptr) exps[v] = e;
    s += static_cast<double>(e);
  }
  return {static_cast<double>(m), s};
}

}  // namespace

template <typename index_t>
int64_t check_targets(std::string_view op, const index_t* targets, int64_t N, int64_t V, int64_t ignore_index) {
  int64_t count = 0;
  for (int64_t n = 0; n < N; n++) {
    const int64_t t = static_cast<int64_t>(targets[n]);
    if (t == ignore_index) continue;
    HT_CHECK(t >= 0 && t < V, "{}: target {} at row {} is outside [0, {}) and is not ignore_index ({})", op, t, n, V,
             ignore_index);
    count++;
  }
  return count;
}

template <typename scalar_t, typename index_t>
void cross_entropy_forward(scalar_t* loss, int64_t* count, const scalar_t* logits, const index_t* targets, int64_t N,
                           int64_t V, int64_t ignore_index) {
  *count = check_targets("cross_entropy_sum", targets, N, V, ignore_index);
  std::vector<double> row_loss(static_cast<size_t>(N), 0.0);
#pragma omp parallel for
  for (int64_t n = 0; n < N; n++) {
    const int64_t t = static_cast<int64_t>(targets[n]);
    if (t == ignore_index) continue;
    const scalar_t* x_n = logits + n * V;
    const RowExp r = row_exp(x_n, V);
    row_loss[static_cast<size_t>(n)] = std::log(r.sum) - static_cast<double>(x_n[t] - static_cast<scalar_t>(r.max));
  }
  double sum = 0.0;
  for (double l : row_loss) sum += l;
  *loss = static_cast<scalar_t>(sum);
}

template <typename scalar_t, typename index_t>
void cross_entropy_backward(scalar_t* dlogits, const scalar_t* logits, const index_t* targets, int64_t N, int64_t V,
                            int64_t ignore_index, double scale) {
  check_targets("cross_entropy_backward", targets, N, V, ignore_index);
#pragma omp parallel for
  for (int64_t n = 0; n < N; n++) {
    const int64_t t = static_cast<int64_t>(targets[n]);
    const scalar_t* x_n = logits + n * V;
    scalar_t* d_n = dlogits + n * V;
    if (t == ignore_index) {
      for (int64_t v = 0; v < V; v++) d_n[v] = scalar_t(0);
      continue;
    }
    const RowExp r = row_exp(x_n, V, d_n);  // d_n holds exp(x - m) now
    const scalar_t factor = static_cast<scalar_t>(scale / r.sum);
    for (int64_t v = 0; v < V; v++) d_n[v] *= factor;  // scale · softmax
    d_n[t] -= static_cast<scalar_t>(scale);
  }
}

template <typename scalar_t, typename index_t>
void cross_entropy_shard_stats(scalar_t* max, scalar_t* sum_exp, scalar_t* target_logit, scalar_t* kept,
                               const scalar_t* logits, const index_t* targets, int64_t N, int64_t C, int64_t real,
                               int64_t offset, int64_t ignore_index) {
#pragma omp parallel for
  for (int64_t n = 0; n < N; n++) {
    const scalar_t* x_n = logits + n * C;
    const RowExp r = row_exp(x_n, real);
    const int64_t t = static_cast<int64_t>(targets[n]);
    const int64_t col = t - offset;
    const bool ignored = t == ignore_index;
    max[n] = static_cast<scalar_t>(r.max);
    sum_exp[n] = static_cast<scalar_t>(r.sum);
    target_logit[n] = !ignored && col >= 0 && col < real ? x_n[col] : scalar_t(0);
    kept[n] = ignored ? scalar_t(0) : scalar_t(1);
  }
}

template <typename scalar_t, typename index_t>
void cross_entropy_shard_backward(scalar_t* dlogits, const scalar_t* grad, const scalar_t* logits,
                                  const index_t* targets, const scalar_t* max, const scalar_t* sum_exp, int64_t N,
                                  int64_t C, int64_t real, int64_t offset, int64_t ignore_index) {
#pragma omp parallel for
  for (int64_t n = 0; n < N; n++) {
    const int64_t t = static_cast<int64_t>(targets[n]);
    const scalar_t* x_n = logits + n * C;
    scalar_t* d_n = dlogits + n * C;
    if (t == ignore_index) {
      for (int64_t c = 0; c < C; c++) d_n[c] = scalar_t(0);
      continue;
    }
    const scalar_t m = max[n];
    const scalar_t factor = static_cast<scalar_t>(static_cast<double>(grad[n]) / static_cast<double>(sum_exp[n]));
    for (int64_t c = 0; c < real; c++) d_n[c] = std::exp(x_n[c] - m) * factor;
    for (int64_t c = real; c < C; c++) d_n[c] = scalar_t(0);
    const int64_t col = t - offset;
    if (col >= 0 && col < real) d_n[col] -= grad[n];
  }
}

#define HT_INSTANTIATE_CROSS_ENTROPY(T, I)                                                                       \
  template void cross_entropy_forward<T, I>(T*, int64_t*, const T*, const I*, int64_t, int64_t, int64_t);       \
  template void cross_entropy_backward<T, I>(T*, const T*, const I*, int64_t, int64_t, int64_t, double);        \
  template void cross_entropy_shard_stats<T, I>(T*, T*, T*, T*, const T*, const I*, int64_t, int64_t, int64_t,  \
                                                int64_t, int64_t);                                              \
  template void cross_entropy_shard_backward<T, I>(T*, const T*, const T*, const I*, const T*, const T*, int64_t, \
                                                   int64_t, int64_t, int64_t, int64_t);
template int64_t check_targets<int32_t>(std::string_view, const int32_t*, int64_t, int64_t, int64_t);
template int64_t check_targets<int64_t>(std::string_view, const int64_t*, int64_t, int64_t, int64_t);
HT_INSTANTIATE_CROSS_ENTROPY(float, int32_t)
HT_INSTANTIATE_CROSS_ENTROPY(float, int64_t)
HT_INSTANTIATE_CROSS_ENTROPY(double, int32_t)
HT_INSTANTIATE_CROSS_ENTROPY(double, int64_t)
#undef HT_INSTANTIATE_CROSS_ENTROPY

}  // namespace hetu::ops::cpu
