// CPU matmul kernel: batched GEMM over OpenBLAS (sgemm for f32, dgemm for f64).
#pragma once

#include <optional>

#include "lib/core/tensor.h"

namespace hetu::ops::cpu {

// How BLAS can read a matrix operand (the last two dims) without copying: row-major with
// leading dimension ld, or column-major (a transpose view). nullopt: it must be copied.
struct MatrixLayout {
  bool transposed_in_memory;
  int64_t ld;
};
std::optional<MatrixLayout> blas_layout(const Tensor& t);

// out (batch..., M, N) = op(a) op(b); a, b already broadcast to out's batch shape (any
// strides); each operand's last two dims must have unit stride on one of them.
void matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, const Tensor& out);

// The linear layer's kernel: out (M, N) = residual + x (M, K) wᵀ + bias, w (N, K) (x and w
// with a blas_layout), bias (N) and residual (M, N) contiguous or undefined, out contiguous.
// out's rows start as residual + bias and the GEMM adds onto them (beta = 1): they cost the
// pass in which BLAS would otherwise zero out (beta = 0), not a read-add-write of the output each.
void linear(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& residual, const Tensor& out);

// Row-major BLAS GEMM (f32 sgemm, f64 dgemm): c (m×n, ldc) = alpha · op(a) op(b) + beta · c.
template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc);

}  // namespace hetu::ops::cpu
