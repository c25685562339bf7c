// CPU kernels for the cross-entropy loss and its fused backward, whole or one vocabulary shard
// at a time. logits and dlogits are (N, V) contiguous, targets (N) contiguous i32/i64; rows
// whose target == ignore_index add nothing to the loss and get a zero gradient row. Loss
// sums are accumulated in double.
#pragma once

#include <cstdint>
#include <string_view>

namespace hetu::ops::cpu {

// Throws "<op>: target T at row n is outside [0, V)" for the first target that is neither
// ignore_index nor in [0, V). Returns how many rows are not ignored.
template <typename index_t>
int64_t check_targets(std::string_view op, const index_t* targets, int64_t N, int64_t V, int64_t ignore_index);

// *loss = Σ over kept rows of logsumexp(logits[n]) - logits[n, target[n]]; *count = kept rows.
template <typename scalar_t, typename index_t>
void cross_entropy_forward(scalar_t* loss, int64_t* count, const scalar_t* logits, const index_t* targets, int64_t N,
                           int64_t V, int64_t ignore_index);

// dlogits = scale · (softmax(logits) - onehot(target)), zero rows where target == ignore_index.
template <typename scalar_t, typename index_t>
void cross_entropy_backward(scalar_t* dlogits, const scalar_t* logits, const index_t* targets, int64_t N, int64_t V,
                            int64_t ignore_index, double scale);

// One shard of a column-split vocabulary (ops.h, cross_entropy_shard_stats): logits (N, C)
// hold classes [offset, offset + C), of which the first `real` columns take part (the rest
// is padding). Per row, in the logits' type: max, Σ exp(z - max) (summed in double), the
// target's logit when t - offset is in [0, real) else 0, kept = [t != ignore_index].
// Targets must already be checked (check_targets against the whole vocabulary).
template <typename scalar_t, typename index_t>
void cross_entropy_shard_stats(scalar_t* max, scalar_t* sum_exp, scalar_t* target_logit, scalar_t* kept,
                               const scalar_t* logits, const index_t* targets, int64_t N, int64_t C, int64_t real,
                               int64_t offset, int64_t ignore_index);

// dlogits (N, C) = grad[n] · (exp(z - max[n]) / sum_exp[n] - [c == t - offset]) in the first
// `real` columns, 0 in padding columns and in ignored rows. max and sum_exp are the global ones.
template <typename scalar_t, typename index_t>
void cross_entropy_shard_backward(scalar_t* dlogits, const scalar_t* grad, const scalar_t* logits,
                                  const index_t* targets, const scalar_t* max, const scalar_t* sum_exp, int64_t N,
                                  int64_t C, int64_t real, int64_t offset, int64_t ignore_index);

}  // namespace hetu::ops::cpu
