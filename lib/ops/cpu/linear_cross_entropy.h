// CPU kernels on one logits tile of the fused LM head + cross-entropy (ops.h,
// linear_cross_entropy): tile (R, C) row-major with leading dimension C holds this chunk's
// logits for classes [offset, offset + C), of which the first `real` columns take part (the
// rest is vocabulary padding); targets (R) are already checked. Rows whose target ==
// ignore_index add nothing and get zero gradient rows.
#pragma once

#include <cstdint>

namespace hetu::ops::cpu {

// Per row: max, Σ exp(z - max), the target's logit (t - offset in [0, real), else 0) and
// kept = [t != ignore_index], as cross_entropy_shard_stats. With keep_exps the tile's first
// `real` columns are overwritten by exp(z - max), which tile_grad then rescales.
template <typename scalar_t, typename index_t>
void tile_stats(scalar_t* tile, bool keep_exps, scalar_t* max, scalar_t* sum_exp, scalar_t* target_logit,
                scalar_t* kept, const index_t* targets, int64_t R, int64_t C, int64_t real, int64_t offset,
                int64_t ignore_index);

// Folds one vocabulary block's row statistics (block_max, block_sum = Σ exp(z - block_max) over
// the block, block_target: the target's logit when it lies in the block, else 0) into those
// of the row's earlier blocks (max, sum relative to max, target), in place: the statistics of
// the blocks so far as one. A row with no real column yet keeps max = -inf and sum = 0.
template <typename scalar_t>
void fold_block_stats(scalar_t* max, scalar_t* sum, scalar_t* target, const scalar_t* block_max,
                      const scalar_t* block_sum, const scalar_t* block_target, int64_t R);

// In place, on a tile of exps from tile_stats (relative to local_max): tile = scale ·
// (exp(z - max) / sum_exp - onehot(t - offset)) with the global max and sum_exp of each row
// (the whole vocabulary's); 0 in padding columns and in ignored rows.
template <typename scalar_t, typename index_t>
void tile_grad(scalar_t* tile, const scalar_t* local_max, const scalar_t* max, const scalar_t* sum_exp,
               const index_t* targets, int64_t R, int64_t C, int64_t real, int64_t offset, int64_t ignore_index,
               double scale);

}  // namespace hetu::ops::cpu
