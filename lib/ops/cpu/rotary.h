// CPU kernel for rotary position embedding (public op: ops.h, rotary). x and out are
// contiguous (B, T, H, D), D even; "rotate half" pairs (i, i + D/2) for i < D/2, rotated by
// angle = (position_offset + t) · inv_freq[i] (D/2 values), or by -angle when inverse.
// Angles, cos and sin are computed in double.
#pragma once

#include <cstdint>

namespace hetu::ops::cpu {

struct RotaryDims {
  int64_t B, T, H, D;
};

template <typename scalar_t>
void rotary(scalar_t* out, const scalar_t* x, const RotaryDims& dims, int64_t position_offset, const double* inv_freq,
            bool inverse);

}  // namespace hetu::ops::cpu
