// CUDA cross-entropy (cross_entropy.cu): logits (N, V) contiguous f32 or bf16, targets (N)
// contiguous i32/i64; rows whose target == ignore_index add nothing and get zero gradients.
#pragma once

#include <cstdint>

#include "lib/core/dtype.h"

namespace hetu::ops::cuda {

// Number of rows not ignored; *bad_row = first row whose target is neither ignore_index nor
// in [0, V) (its target in *bad_value), or -1. Waits for the device.
int64_t check_targets(DType index_dtype, const void* targets, int64_t N, int64_t V, int64_t ignore_index,
                      int64_t* bad_row, int64_t* bad_value);
// *loss (one f32 on the device) = Σ over kept rows of logsumexp(row) - row[target].
void cross_entropy_forward(DType dtype, DType index_dtype, float* loss, const void* logits, const void* targets,
                           int64_t N, int64_t V, int64_t ignore_index);
// dlogits = scale · (softmax(row) - onehot(target)), zero rows where ignored.
void cross_entropy_backward(DType dtype, DType index_dtype, void* dlogits, const void* logits, const void* targets,
                            int64_t N, int64_t V, int64_t ignore_index, float scale);

}  // namespace hetu::ops::cuda
