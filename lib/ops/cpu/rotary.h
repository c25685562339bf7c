// CPU kernel for rotary position embedding (public op: ops.h, rotary). x and out are
// contiguous (B, T, H, D), D even; "rotate half" pairs (i, i + D/2) for i < D/2, rotated by
// angle = position · inv_freq[i] (D/2 values), or by -angle when inverse, where the position
// of row (b, t) is positions[b·T + t] when positions is given, else position_offset + t.
// Angles, cos and sin are computed in double.
#pragma once

#include <cstdint>

namespace hetu::ops::cpu {

struct RotaryDims {
  int64_t B, T, H, D;
};

template <typename scalar_t>
void rotary(scalar_t* out, const scalar_t* x, const RotaryDims& dims, int64_t position_offset, const double* inv_freq,
            bool inverse, const int64_t* positions = nullptr);

}  // namespace hetu::ops::cpu
