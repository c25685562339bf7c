// CUDA softmax and log_softmax over the last dim (softmax.cu): contiguous (N, C) buffers,
// f32 or bf16, f32 arithmetic. Backward from the forward's output y (see ops.h).
#pragma once

#include <cstdint>

#include "lib/core/dtype.h"

namespace hetu::ops::cuda {

void softmax_forward(DType dtype, void* out, const void* x, int64_t N, int64_t C, bool log);
void softmax_backward(DType dtype, void* dx, const void* grad, const void* y, int64_t N, int64_t C, bool log);

}  // namespace hetu::ops::cuda
