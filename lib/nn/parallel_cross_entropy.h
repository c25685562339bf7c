// Cross-entropy over logits whose vocabulary is split over a tensor-parallel group (the
// vocab-parallel LM head): the full logits are never gathered. Each rank holds columns
// [vocab_offset, vocab_offset + local columns) of the padded vocabulary; columns at or past
// `vocab` (padding) take no part in the softmax.
//
//   loss = Σ_tokens (log Σ_v exp(z_v) - z_target) / normalizer       (normalizer 0: tokens)
//
// computed from one fused pass over the local logits (ops::cross_entropy_shard_stats: row
// max, Σ exp(z - max), target logit), an all_gather of the row maxima and one all_reduce of
// the rescaled sums and target logits; the backward is one fused pass too
// (ops::cross_entropy_shard_backward). Every tensor stays on the logits' device (targets
// too; tp's communicator must work on that device: MPI for CPU tensors, NCCL for CUDA).
// The loss is duplicated over the group; seed its backward on one rank of the group (the
// gradient of a duplicated value is partial: lib/hspmd/redistribute.h) — the backward sums
// the seeds over the group, so every rank gets its shard's gradient. The backward is a
// collective: every rank of the group runs it. With one rank (or no `tp`) this is the fused
// autograd::cross_entropy over the first `vocab` columns.
#pragma once

#include <cstdint>

#include "lib/core/tensor.h"
#include "lib/ops/ops.h"

namespace hetu::nn {

class TensorParallel;

// logits (N, V_local), targets (N) i32/i64 global ids (ignore_index skipped).
Tensor parallel_cross_entropy(const Tensor& logits, const Tensor& targets, int64_t vocab_offset, int64_t vocab,
                              const TensorParallel* tp, double normalizer = 0, int64_t ignore_index = -100);

// The same loss with the LM head fused in (ops::linear_cross_entropy): logits = hidden
// weightᵀ are never held, only one tile of rows at a time; the tiles' statistics are
// combined over the group chunk by chunk, and both gradients are computed with the loss.
// hidden (N, C) duplicated over the group, weight (V_local, C) this rank's vocabulary rows;
// hidden's gradient is this rank's partial share, as the unfused matmul's.
Tensor parallel_linear_cross_entropy(const Tensor& hidden, const Tensor& weight, const Tensor& targets,
                                     int64_t vocab_offset, int64_t vocab, const TensorParallel* tp,
                                     double normalizer = 0, int64_t ignore_index = -100);

// The row statistics over the whole vocabulary from each rank's (a collective over tp's
// group): M = max_r m_r, S = Σ_r s_r · exp(m_r - M), T = Σ_r t_r. The fused LM head
// (parallel_linear_cross_entropy.h) combines its tiles with it too.
ops::VocabRowStats combine_vocab_shards(const ops::CrossEntropyShardStats& local, const TensorParallel& tp);

}  // namespace hetu::nn
