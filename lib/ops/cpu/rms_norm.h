// CPU kernels for RMS normalisation over the last dim, forward and backward.
// x, out, grad, dx are (N, C) contiguous; weight, dweight are (C); rstd is (N). Row sums and
// parameter-gradient sums are accumulated in double.
#pragma once

#include <cstdint>

namespace hetu::ops::cpu {

// rstd = 1/sqrt(mean(x²) + eps), out = x·rstd·w.
template <typename scalar_t>
void rms_norm_forward(scalar_t* out, scalar_t* rstd, const scalar_t* x, const scalar_t* weight, int64_t N, int64_t C,
                      double eps);

// Writes (=, not +=) dx, and dweight summed over all N rows, from the saved rstd.
template <typename scalar_t>
void rms_norm_backward(scalar_t* dx, scalar_t* dweight, const scalar_t* grad, const scalar_t* x, const scalar_t* weight,
                       const scalar_t* rstd, int64_t N, int64_t C);

}  // namespace hetu::ops::cpu
