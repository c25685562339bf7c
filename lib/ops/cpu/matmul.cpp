// Batched GEMM on OpenBLAS. A matrix operand may be row-major (stride (ld, 1)) or column-
// major (stride (1, ld)) in memory; the second is passed to BLAS as a transpose, so
// transposed views never copy. Batch dims may have any strides (including 0: broadcast).
// f32 GEMMs of the linear layers' sizes may run on blocked_sgemm instead (gemm_choice.h).
#include "lib/ops/cpu/matmul.h"

#include <cblas.h>

#include <algorithm>

#include "lib/core/dispatch.h"
#include "lib/core/strided_loop.h"
#include "lib/ops/cpu/blocked_sgemm.h"
#include "lib/ops/cpu/gemm_choice.h"

namespace hetu::ops::cpu {
template <typename T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b, int64_t ldb,
          T beta, T* c, int64_t ldc) {
  const CBLAS_TRANSPOSE opa = ta ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE opb = tb ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>) {
    if (alpha == 1.0f && (beta == 0.0f || beta == 1.0f) && blocked_sgemm_chosen(m, n, k)) {
      blocked_sgemm(ta, tb, m, n, k, a, lda, b, ldb, beta == 1.0f, c, ldc);
      return;
    }
    cblas_sgemm(CblasRowMajor, opa, opb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
                static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
  } else {
    cblas_dgemm(CblasRowMajor, opa, opb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
                static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
  }
}
template void gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                          float, float*, int64_t);
template void gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t, const double*,
                           int64_t, double, double*, int64_t);

std::optional<MatrixLayout> blas_layout(const Tensor& t) {
  const int64_t rows = t.size(-2), cols = t.size(-1);
  const int64_t s_row = t.strides()[static_cast<size_t>(t.dim() - 2)];
  const int64_t s_col = t.strides()[static_cast<size_t>(t.dim() - 1)];
  // Size-1 dims may carry any stride: BLAS never steps along them.
  if ((cols == 1 || s_col == 1) && (rows == 1 || s_row >= cols)) {
    return MatrixLayout{false, rows == 1 ? std::max<int64_t>(cols, 1) : std::max<int64_t>(s_row, 1)};
  }
  if ((rows == 1 || s_row == 1) && (cols == 1 || s_col >= rows)) {
    return MatrixLayout{true, cols == 1 ? std::max<int64_t>(rows, 1) : std::max<int64_t>(s_col, 1)};
  }
  return std::nullopt;
}

void matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, const Tensor& out) {
  const int64_t m = out.size(-2), n = out.size(-1);
  const int64_t k = trans_a ? a.size(-2) : a.size(-1);
  const std::optional<MatrixLayout> la_opt = blas_layout(a), lb_opt = blas_layout(b);
  HT_CHECK(la_opt && lb_opt, "matmul: internal error: operand strides not BLAS-compatible");
  const MatrixLayout la = *la_opt, lb = *lb_opt;
  // Row-major BLAS sees a column-major operand as its transpose.
  const bool blas_ta = trans_a != la.transposed_in_memory;
  const bool blas_tb = trans_b != lb.transposed_in_memory;
  Shape batch(out.shape().begin(), out.shape().end() - 2);
  auto batch_strides = [&](const Tensor& t) { return Shape(t.strides().begin(), t.strides().end() - 2); };
  HT_DISPATCH_FLOAT(out.dtype(), "matmul", out.device(), [&] {
    const scalar_t* pa = static_cast<const scalar_t*>(a.storage()->data());
    const scalar_t* pb = static_cast<const scalar_t*>(b.storage()->data());
    scalar_t* pc = static_cast<scalar_t*>(out.storage()->data());
    if (k == 0) {
      std::fill_n(pc + out.offset(), out.numel(), scalar_t(0));
      return;
    }
    // A trailing batch dim of size 1 per row so for_each_row visits one matrix per "element".
    Shape walk = batch;
    walk.push_back(1);
    Shape sa = batch_strides(a), sb = batch_strides(b), sc = batch_strides(out);
    sa.push_back(0);
    sb.push_back(0);
    sc.push_back(0);
    for_each_row<3>(walk, {sa, sb, sc}, {a.offset(), b.offset(), out.offset()}, [&](auto off, int64_t, auto) {
      gemm<scalar_t>(blas_ta, blas_tb, m, n, k, scalar_t(1), pa + off[0], la.ld, pb + off[1], lb.ld, scalar_t(0),
                     pc + off[2], n);
    });
  });
}

void linear(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& residual, const Tensor& out) {
  const int64_t m = out.size(0), n = out.size(1), k = x.size(1);
  const std::optional<MatrixLayout> lx = blas_layout(x), lw = blas_layout(w);
  HT_CHECK(lx && lw && out.is_contiguous(), "linear: internal error: operand strides not BLAS-compatible");
  HT_DISPATCH_FLOAT(out.dtype(), "linear", out.device(), [&] {
    scalar_t* pc = out.data<scalar_t>();
    const scalar_t* pb = bias.defined() ? bias.data<scalar_t>() : nullptr;
    const scalar_t* pr = residual.defined() ? residual.data<scalar_t>() : nullptr;
    // Rows start as the bias and the GEMM adds onto them; the residual is added after, row by
    // row while the row is in cache: out = (x Wᵀ + b) + residual, the order the row-parallel
    // form (reduce, + b, + residual) rounds in, so tp layouts train the one-device numbers.
    const bool start = pb != nullptr;
    for (int64_t r = 0; r < m; ++r) {
      scalar_t* row = pc + r * n;
      if (pb != nullptr) {
        std::copy_n(pb, n, row);
      } else if (k == 0) {
        std::fill_n(row, n, scalar_t(0));
      }
    }
    if (k > 0 && m > 0 && n > 0) {
      // Row-major BLAS sees a column-major operand as its transpose; w enters transposed.
      gemm<scalar_t>(lx->transposed_in_memory, !lw->transposed_in_memory, m, n, k, scalar_t(1), x.data<scalar_t>(),
                     lx->ld, w.data<scalar_t>(), lw->ld, start ? scalar_t(1) : scalar_t(0), pc, n);
    }
    if (pr != nullptr) {
      for (int64_t r = 0; r < m; ++r) {
        scalar_t* row = pc + r * n;
        const scalar_t* res = pr + r * n;
        for (int64_t j = 0; j < n; ++j) row[j] += res[j];
      }
    }
  });
}

}  // namespace hetu::ops::cpu
