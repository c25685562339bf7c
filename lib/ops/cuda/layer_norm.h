// CUDA layer_norm over the last dim (layer_norm.cu): x, out, grad, dx (N, C) contiguous;
// weight, bias, dweight, dbias (C) of x's dtype (f32 or bf16); mean, rstd (N) always f32.
#pragma once

#include <cstdint>

#include "lib/core/dtype.h"

namespace hetu::ops::cuda {

void layer_norm_forward(DType dtype, void* out, float* mean, float* rstd, const void* x, const void* weight,
                        const void* bias, int64_t N, int64_t C, float eps);
// Writes dx, and dweight, dbias summed over the N rows (deterministic: fixed row chunks).
void layer_norm_backward(DType dtype, void* dx, void* dweight, void* dbias, const void* grad, const void* x,
                         const void* weight, const float* mean, const float* rstd, int64_t N, int64_t C);

}  // namespace hetu::ops::cuda
