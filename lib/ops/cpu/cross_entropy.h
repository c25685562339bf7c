// CPU kernels for the cross-entropy loss and its fused backward. logits and dlogits are
// (N, V) contiguous, targets (N) contiguous i32/i64; rows whose target == ignore_index add
// nothing to the loss and get a zero gradient row. Loss sums are accumulated in double.
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

}  // namespace hetu::ops::cpu
