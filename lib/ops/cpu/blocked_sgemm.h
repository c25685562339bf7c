// hetu's own f32 GEMM for the linear layers' mid-size shapes: a register-blocked microkernel
// per vector level (Note [Kernel ISA levels]) over operands packed into cache-sized blocks.
// Beside OpenBLAS's sgemm, see Note [Blocked sgemm] in blocked_sgemm.cpp; which of the two a
// matmul runs: gemm_choice.h.
#pragma once

#include <cstdint>

namespace hetu::ops::cpu {

// c (m×n, row-major, ldc) = op(a) op(b), plus c's old value when accumulate; op(x) = xᵀ when
// trans_x. a is m×k (k×m when trans_a), b k×n (n×k when trans_b), both row-major with
// leading dimensions lda, ldb. Any sizes >= 0; runs at every ISA level (baseline included, for
// the tests), the work split over hetu's OpenMP threads by output rows: the result does not
// depend on the thread count.
void blocked_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                   const float* b, int64_t ldb, bool accumulate, float* c, int64_t ldc);

}  // namespace hetu::ops::cpu
