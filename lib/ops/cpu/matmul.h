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

}  // namespace hetu::ops::cpu
