// CPU kernels for layer normalisation over the last dim, forward and backward.
// x, out, grad, dx are (N, C) contiguous; weight, bias, dweight, dbias are (C); mean, rstd
// are (N). Row statistics and parameter-gradient sums are accumulated in double.
#pragma once

#include <cstdint>

namespace hetu::ops::cpu {

// mean = mean(x), rstd = 1/sqrt(var(x) + eps) (biased variance), out = (x - mean)·rstd·w + b.
template <typename scalar_t>
void layer_norm_forward(scalar_t* out, scalar_t* mean, scalar_t* rstd, const scalar_t* x, const scalar_t* weight,
                        const scalar_t* bias, int64_t N, int64_t C, double eps);

// Writes (=, not +=) dx, and dweight, dbias summed over all N rows, from the saved mean, rstd.
template <typename scalar_t>
void layer_norm_backward(scalar_t* dx, scalar_t* dweight, scalar_t* dbias, const scalar_t* grad, const scalar_t* x,
                         const scalar_t* weight, const scalar_t* mean, const scalar_t* rstd, int64_t N, int64_t C);

}  // namespace hetu::ops::cpu
