// CPU tile kernels of the fused LM head + cross-entropy. A tile is one vocabulary block of a
// row chunk (ops/linear_cross_entropy.cpp); fold_block_stats merges the blocks' row statistics.
// One pass per row computes the max, then the exponentials (fast_exp for f32, std::exp for f64: fast_math.h) summed and, when
// gradients follow, stored in place; the gradient pass only rescales them, so every logit is
// exponentiated once. Rows run in parallel (OpenMP); the per-row loops vectorise (run_isa).
#include "lib/ops/cpu/linear_cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "lib/ops/cpu/fast_math.h"
#include "lib/ops/cpu/isa.h"

namespace hetu::ops::cpu {
namespace {

struct RowMaxExp {
  // *max = max of x[0, n); *sum = Σ exp(x - max), written back into x when `store`.
  template <typename T> static void run(T* x, int64_t n, bool store, T* max, T* sum) {
    const T m = max_of(x, n, -std::numeric_limits<T>::infinity());
    T s = 0;
    if (store) {
#pragma omp simd reduction(+ : s)
      for (int64_t c = 0; c < n; ++c) {
        const T e = fast_exp(x[c] - m);
        x[c] = e;
        s += e;
      }
    } else {
#pragma omp simd reduction(+ : s)
      for (int64_t c = 0; c < n; ++c) s += fast_exp(x[c] - m);
    }
    *max = m;
    *sum = s;
  }
};

struct RowScale {
  template <typename T> static void run(T* x, int64_t n, T factor) {
#pragma omp simd
    for (int64_t c = 0; c < n; ++c) x[c] *= factor;
  }
};

}  // namespace

template <typename scalar_t, typename index_t>
void tile_stats(scalar_t* tile, bool keep_exps, scalar_t* max, scalar_t* sum_exp, scalar_t* target_logit,
                scalar_t* kept, const index_t* targets, int64_t R, int64_t C, int64_t real, int64_t offset,
                int64_t ignore_index) {
#pragma omp parallel for
  for (int64_t r = 0; r < R; r++) {
    scalar_t* x = tile + r * C;
    const int64_t t = static_cast<int64_t>(targets[r]);
    const int64_t col = t - offset;
    const bool ignored = t == ignore_index;
    target_logit[r] = !ignored && col >= 0 && col < real ? x[col] : scalar_t(0);  // read before the exps
    kept[r] = ignored ? scalar_t(0) : scalar_t(1);
    run_isa<RowMaxExp>(x, real, keep_exps && !ignored, max + r, sum_exp + r);
  }
}

template <typename scalar_t>
void fold_block_stats(scalar_t* max, scalar_t* sum, scalar_t* target, const scalar_t* block_max,
                      const scalar_t* block_sum, const scalar_t* block_target, int64_t R) {
  constexpr scalar_t kNegInf = -std::numeric_limits<scalar_t>::infinity();
  for (int64_t r = 0; r < R; r++) {
    const scalar_t m = std::max(max[r], block_max[r]);
    // exp(-inf - m) is 0 for a finite m; m = -inf (no real column so far) keeps the sum at 0.
    const scalar_t old_part = max[r] == kNegInf ? scalar_t(0) : sum[r] * std::exp(max[r] - m);
    const scalar_t new_part = block_max[r] == kNegInf ? scalar_t(0) : block_sum[r] * std::exp(block_max[r] - m);
    max[r] = m;
    sum[r] = old_part + new_part;
    target[r] += block_target[r];
  }
}

template <typename scalar_t, typename index_t>
void tile_grad(scalar_t* tile, const scalar_t* local_max, const scalar_t* max, const scalar_t* sum_exp,
               const index_t* targets, int64_t R, int64_t C, int64_t real, int64_t offset, int64_t ignore_index,
               double scale) {
#pragma omp parallel for
  for (int64_t r = 0; r < R; r++) {
    scalar_t* x = tile + r * C;
    const int64_t t = static_cast<int64_t>(targets[r]);
    if (t == ignore_index) {
      std::fill(x, x + C, scalar_t(0));
      continue;
    }
    // The tile holds exp(z - local_max); exp(z - max) / S = that · exp(local_max - max) / S.
    const double shift = std::exp(static_cast<double>(local_max[r]) - static_cast<double>(max[r]));
    run_isa<RowScale>(x, real, static_cast<scalar_t>(scale * shift / static_cast<double>(sum_exp[r])));
    std::fill(x + real, x + C, scalar_t(0));
    const int64_t col = t - offset;
    if (col >= 0 && col < real) x[col] -= static_cast<scalar_t>(scale);
  }
}

#define HT_INSTANTIATE_TILE(T, I)                                                                             \
  template void tile_stats<T, I>(T*, bool, T*, T*, T*, T*, const I*, int64_t, int64_t, int64_t, int64_t,   \
                                 int64_t);                                                                   \
  template void tile_grad<T, I>(T*, const T*, const T*, const T*, const I*, int64_t, int64_t, int64_t, int64_t, \
                                int64_t, double);
template void fold_block_stats<float>(float*, float*, float*, const float*, const float*, const float*, int64_t);
template void fold_block_stats<double>(double*, double*, double*, const double*, const double*, const double*,
                                       int64_t);
HT_INSTANTIATE_TILE(float, int32_t)
HT_INSTANTIATE_TILE(float, int64_t)
HT_INSTANTIATE_TILE(double, int32_t)
HT_INSTANTIATE_TILE(double, int64_t)
#undef HT_INSTANTIATE_TILE

}  // namespace hetu::ops::cpu
