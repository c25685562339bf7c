// Row reductions: sums accumulate in double (f32 sums of long rows stay accurate), max
// keeps the first index of the maximum; NaN propagates. Column sums (sum_columns,
// add_column_sums) add each column in row order, so they equal sum_rows over the transposed
// tensor bit for bit, and sums taken in consecutive row pieces equal one sum over all rows.
#include "lib/ops/cpu/reduce.h"

#include <algorithm>
#include <cmath>

#include "lib/core/dispatch.h"
#include "lib/ops/cpu/isa.h"

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

constexpr int64_t kColumnBlock = 512;  // double accumulators per block: 4 KiB, stays in L1

// One block of n <= kColumnBlock columns of a row-major px with leading dimension ld:
// acc[c] += Σ_r px[r·ld + c], each column added in row order in double. Columns are
// independent, so every ISA level gives the same bits (run_isa: the bias gradients of the
// linear layers are such sums, and the baseline build's 2-wide conversions took 2.2× as long).
struct ColumnBlockAdd {
  template <typename T> static void run(const T* px, int64_t rows, int64_t ld, int64_t n, double* acc) {
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = px + r * ld;
#pragma omp simd
      for (int64_t c = 0; c < n; ++c) acc[c] += static_cast<double>(row[c]);
    }
  }
};

// fn(c0, n) over the blocks of kColumnBlock columns of a (rows, cols) reduction, split across
// threads when large: disjoint columns, so results do not depend on the thread count.
template <typename Fn> void for_column_blocks(int64_t rows, int64_t cols, Fn fn) {
  const int64_t blocks = (cols + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for schedule(static) if (blocks > 1 && rows * cols > (1 << 15))
  for (int64_t b = 0; b < blocks; ++b) fn(b * kColumnBlock, std::min(kColumnBlock, cols - b * kColumnBlock));
}

// po[c] = scale · Σ_r px[r, c] for a contiguous (rows, cols) px.
template <typename T>
void sum_columns_impl(const T* px, int64_t rows, int64_t cols, double scale, T* po) {
  for_column_blocks(rows, cols, [&](int64_t c0, int64_t n) {
    double acc[kColumnBlock];
    std::fill(acc, acc + n, 0.0);
    run_isa<ColumnBlockAdd>(px + c0, rows, cols, n, acc);
    for (int64_t c = 0; c < n; ++c) po[c0 + c] = static_cast<T>(acc[c] * scale);
  });
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

void sum_columns(const Tensor& x, int64_t rows, double scale, const Tensor& out) {
  HT_DISPATCH_FLOAT(x.dtype(), "sum", x.device(), [&] {
    sum_columns_impl(x.data<scalar_t>(), rows, out.numel(), scale, out.data<scalar_t>());
  });
}

template <typename T> void add_column_sums(const T* x, int64_t rows, int64_t cols, int64_t ld, double* acc) {
  for_column_blocks(rows, cols, [&](int64_t c0, int64_t n) { run_isa<ColumnBlockAdd>(x + c0, rows, ld, n, acc + c0); });
}
template void add_column_sums<float>(const float*, int64_t, int64_t, int64_t, double*);
template void add_column_sums<double>(const double*, int64_t, int64_t, int64_t, double*);

void max_rows(const Tensor& x, int64_t inner, const Tensor& out, const Tensor& argmax) {
  HT_DISPATCH_FLOAT(x.dtype(), "max", x.device(), [&] {
    max_rows_impl(x.data<scalar_t>(), out.numel(), inner, out.data<scalar_t>(),
                  argmax.defined() ? argmax.data<int64_t>() : nullptr);
  });
}

}  // namespace hetu::ops::cpu
