// CPU kernels for the optimizer: the AdamW update over flat contiguous buffers of n elements
// (param, grad, m, v all the same length) and the sum of squares behind global_norm.
#pragma once

#include <cstdint>

namespace hetu::ops::cpu {

// Scalars of one AdamW step, bias corrections already computed: bc1 = 1 − β1^t, bc2 = 1 − β2^t.
struct AdamWScalars {
  double lr, beta1, beta2, eps, weight_decay, bc1, bc2, grad_scale;
};

// g = grad_scale·grad; m = β1·m + (1−β1)·g;  v = β2·v + (1−β2)·g²;  p -= lr·((m/bc1) / (√(v/bc2) + eps) + wd·p)
template <typename scalar_t>
void adamw_update(scalar_t* param, const scalar_t* grad, scalar_t* m, scalar_t* v, int64_t n, const AdamWScalars& s);

// x *= inv_scale in place; true when any result is inf or nan (its exponent bits all ones),
// found in the same pass (fp16's unscale).
template <typename scalar_t> bool unscale_and_check(scalar_t* x, int64_t n, double inv_scale);

// Σ x² in double. Deterministic: fixed blocks, partials added in block order.
template <typename scalar_t> double sum_squares(const scalar_t* x, int64_t n);

}  // namespace hetu::ops::cpu
