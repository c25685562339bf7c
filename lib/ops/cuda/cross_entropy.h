// CUDA cross-entropy (cross_entropy.cu), whole or one vocabulary shard: logits (N, V)
// contiguous f32 or bf16, targets (N) contiguous i32/i64; rows whose target == ignore_index
// add nothing and get zero gradients.
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

// One vocabulary shard (ops.h, cross_entropy_shard_stats): logits (N, C), of which the first
// `real` columns take part; per row (f32 outputs, each N long): max, Σ exp(z - max), the
// target's logit when t - offset is in [0, real) else 0, kept = [t != ignore_index].
void cross_entropy_shard_stats(DType dtype, DType index_dtype, float* max, float* sum_exp, float* target_logit,
                               float* kept, const void* logits, const void* targets, int64_t N, int64_t C,
                               int64_t real, int64_t offset, int64_t ignore_index);
// dlogits (N, C) = grad[n] · (exp(z - max[n]) / sum_exp[n] - [c == t - offset]); 0 in the
// padding columns (c >= real) and in ignored rows. grad, max, sum_exp: f32 (N).
void cross_entropy_shard_backward(DType dtype, DType index_dtype, void* dlogits, const float* grad,
                                  const void* logits, const void* targets, const float* max, const float* sum_exp,
                                  int64_t N, int64_t C, int64_t real, int64_t offset, int64_t ignore_index);

}  // namespace hetu::ops::cuda
