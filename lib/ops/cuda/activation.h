// CUDA kernels for GELU (tanh approximation) and SiLU, forward and fused backward
// (activation.cu). Contiguous buffers of n elements, f32 or bf16; dx is written (=).
#pragma once

#include <cstdint>

#include "lib/core/dtype.h"

namespace hetu::ops::cuda {

void gelu_forward(DType dtype, void* out, const void* x, int64_t n);
void gelu_backward(DType dtype, void* dx, const void* grad, const void* x, int64_t n);
void silu_forward(DType dtype, void* out, const void* x, int64_t n);
void silu_backward(DType dtype, void* dx, const void* grad, const void* x, int64_t n);

}  // namespace hetu::ops::cuda
