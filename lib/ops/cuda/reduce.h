// CUDA row reductions (reduce.cu): x contiguous (outer, inner), f32 or bf16, f32 accumulation.
#pragma once

#include <cstdint>

#include "lib/core/dtype.h"

namespace hetu::ops::cuda {

// out (outer) = scale · Σ row.
void sum_rows(DType dtype, void* out, const void* x, int64_t outer, int64_t inner, float scale);
// out (outer) = max of each row (NaN propagates); argmax (i64, may be null) = first index of it.
void max_rows(DType dtype, void* out, int64_t* argmax, const void* x, int64_t outer, int64_t inner);
// out (outer, n, inner), already zeroed: out[o, argmax[o, i], i] = grad[o, i].
void max_backward(DType dtype, void* out, const void* grad, const int64_t* argmax, int64_t outer, int64_t n,
                  int64_t inner);

}  // namespace hetu::ops::cuda
