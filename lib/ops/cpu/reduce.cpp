// Row reductions: sums accumulate in double (f32 sums of long rows stay accurate), max
// keeps the first index of the maximum; NaN propagates.
#include "lib/ops/cpu/reduce.h"

#include <cmath>

#include "lib/core/dispatch.h"

namespace hetu::ops::cpu {
namespace {

template <typename T>
void sum_rows_impl(const T* px, int64_t outer, int64_t inner, double scale, T* po) {
#pragma omp parallel for schedule(static) if (outer * inner > (1 << 15))
  for (int64_t r = 0; r < outer; ++r) {
    const T* row = px + r * inner;
    double acc = 0;
    for (int64_t i = 0; i < inner; ++i) acc += static_cast<double>(row[i]);
    po[r] = static_cast<T>(acc * scale);
  }
}

template <typename T>
void max_rows_impl(const T* px, int64_t outer, int64_t inner, T* po, int64_t* pi) {
#pragma omp parallel for schedule(static) if (outer * inner > (1 << 15))
  for (int64_t r = 0; r < outer; ++r) {
    const T* row = px + r * inner;
    int64_t best = 0;
    for (int64_t i = 1; i < inner && !std::isnan(row[best]); ++i) {
      if (row[i] > row[best] || std::isnan(row[i])) best = i;
    }
    po[r] = row[best];
    if (pi != nullptr) pi[r] = best;
  }
}

}  // namespace

void sum_rows(const Tensor& x, int64_t inner, double scale, const Tensor& out) {
  HT_DISPATCH_FLOAT(x.dtype(), "sum", x.device(), [&] {
    sum_rows_impl(x.data<scalar_t>(), out.numel(), inner, scale, out.data<scalar_t>());
  });
}

void max_rows(const Tensor& x, int64_t inner, const Tensor& out, const Tensor& argmax) {
  HT_DISPATCH_FLOAT(x.dtype(), "max", x.device(), [&] {
    max_rows_impl(x.data<scalar_t>(), out.numel(), inner, out.data<scalar_t>(),
                  argmax.defined() ? argmax.data<int64_t>() : nullptr);
  });
}

}  // namespace hetu::ops::cpu
