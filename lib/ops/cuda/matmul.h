// CUDA matmul on cuBLAS (matmul.cpp, host code): row-major batched GEMMs with f32 or bf16
// inputs, f32 accumulation (bf16 inputs run on tensor cores), f32 or bf16 output.
#pragma once

#include <cstdint>

#include "lib/core/tensor.h"

namespace hetu::ops::cuda {

// One row-major operand: element (i, j) of op(X) is ptr[i·ld + j] (trans false) or
// ptr[j·ld + i] (trans true); matrix b of the batch starts at ptr + b·batch_stride.
struct GemmOperand {
  const void* ptr;
  int64_t ld;
  int64_t batch_stride;
  bool trans;
};

// C[b] (M×N, row-major, ldc) = alpha · op(A[b]) op(B[b]) + beta · C[b] for b < batch, on the
// current stream. in_dtype: dtype of A and B; out_dtype: of C.
void gemm(DType in_dtype, DType out_dtype, int64_t M, int64_t N, int64_t K, float alpha, const GemmOperand& a,
          const GemmOperand& b, float beta, void* c, int64_t ldc, int64_t stride_c, int64_t batch);

// ops::matmul's kernel, contract of cpu::matmul: out (batch..., M, N) contiguous; a, b
// broadcast to out's batch shape with unit stride on one of their last two dims.
void matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, const Tensor& out);

}  // namespace hetu::ops::cuda
