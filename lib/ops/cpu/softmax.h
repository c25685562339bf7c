// CPU kernels for softmax and log_softmax over the last dim, forward and backward.
// Every buffer is contiguous and (N, C): N rows of C values. Row reductions (max, sum of
// exps, sum of grad·y) are done in double; the result is stored as scalar_t (float or double).
#pragma once

#include <cstdint>

namespace hetu::ops::cpu {

// out = exp(x - max) / sum(exp(x - max)), per row.
template <typename scalar_t> void softmax_forward(scalar_t* out, const scalar_t* x, int64_t N, int64_t C);
// dx = y · (grad - sum(grad · y)), y = softmax(x).
template <typename scalar_t>
void softmax_backward(scalar_t* dx, const scalar_t* grad, const scalar_t* y, int64_t N, int64_t C);

// out = x - max - log(sum(exp(x - max))), per row.
template <typename scalar_t> void log_softmax_forward(scalar_t* out, const scalar_t* x, int64_t N, int64_t C);
// dx = grad - exp(y) · sum(grad), y = log_softmax(x).
template <typename scalar_t>
void log_softmax_backward(scalar_t* dx, const scalar_t* grad, const scalar_t* y, int64_t N, int64_t C);

}  // namespace hetu::ops::cpu
