// CUDA optimizer kernels (optimizer.cu): fused AdamW over flat contiguous buffers and the
// sum of squares behind global_norm. param, grad, m, v share one dtype (f32 or bf16);
// arithmetic in f32.
#pragma once

#include <cstdint>

#include "lib/core/dtype.h"
#include "lib/ops/cpu/optimizer.h"

namespace hetu::ops::cuda {

void adamw_update(DType dtype, void* param, const void* grad, void* m, void* v, int64_t n,
                  const cpu::AdamWScalars& s);
// x *= inv_scale in place (f32, bf16 or f16); *found (an i32 on the device) = 1 when any result
// is inf or nan, checked in the same pass.
void unscale_and_check(DType dtype, void* x, int64_t n, float inv_scale, int32_t* found);
// *acc (one f64 on the device) += Σ x², deterministic (fixed blocks, partials in order, f64).
void sum_squares_accumulate(DType dtype, const void* x, int64_t n, double* acc);

}  // namespace hetu::ops::cuda
