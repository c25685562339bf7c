// CUDA rms_norm over the last dim (rms_norm.cu): x, out, grad, dx (N, C) contiguous; weight,
// dweight (C) of x's dtype (f32 or bf16); rstd (N) always f32.
#pragma once

#include <cstdint>

#include "lib/core/dtype.h"

namespace hetu::ops::cuda {

void rms_norm_forward(DType dtype, void* out, float* rstd, const void* x, const void* weight, int64_t N, int64_t C,
                      float eps);
// Writes dx, and dweight summed over the N rows (deterministic).
void rms_norm_backward(DType dtype, void* dx, void* dweight, const void* grad, const void* x, const void* weight,
                       const float* rstd, int64_t N, int64_t C);

}  // namespace hetu::ops::cuda
