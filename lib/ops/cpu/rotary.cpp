// CPU kernel for rotary position embedding (see rotary.h). A table of cos and sin per position
// ((T, D/2) for offset + t; (max position + 1, D/2) for given positions) is built once in
// double, then every (b, t) row of H heads is rotated with its position's entry:
//   out_i = x_i cos − x_{i+D/2} sin,  out_{i+D/2} = x_{i+D/2} cos + x_i sin.
#include "lib/ops/cpu/rotary.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace hetu::ops::cpu {
namespace {
constexpr int64_t kParallelGrain = 1 << 14;  // elements below which one thread is faster
}  // namespace

template <typename scalar_t>
void rotary(scalar_t* out, const scalar_t* x, const RotaryDims& dims, int64_t position_offset, const double* inv_freq,
            bool inverse, const int64_t* positions) {
  const int64_t B = dims.B, T = dims.T, H = dims.H, D = dims.D;
  const int64_t half = D / 2;
  // cos_table/sin_table are (P, D/2): row p for position first + p.
  const int64_t first = positions != nullptr ? 0 : position_offset;
  const int64_t P = positions != nullptr ? (B * T > 0 ? *std::max_element(positions, positions + B * T) + 1 : 0) : T;
  std::vector<double> cos_table(static_cast<size_t>(P * half)), sin_table(static_cast<size_t>(P * half));
  const double sign = inverse ? -1.0 : 1.0;
#pragma omp parallel for schedule(static) if (P * half >= kParallelGrain / 8)
  for (int64_t t = 0; t < P; ++t) {
    const double position = static_cast<double>(first + t);
    for (int64_t i = 0; i < half; ++i) {
      const double angle = position * inv_freq[i];
      cos_table[static_cast<size_t>(t * half + i)] = std::cos(angle);
      sin_table[static_cast<size_t>(t * half + i)] = sign * std::sin(angle);
    }
  }

#pragma omp parallel for schedule(static) if (B * T * H * D >= kParallelGrain)
  for (int64_t bt = 0; bt < B * T; ++bt) {
    const int64_t p = positions != nullptr ? positions[bt] : bt % T;
    const double* c = cos_table.data() + p * half;
    const double* s = sin_table.data() + p * half;
    for (int64_t h = 0; h < H; ++h) {
      const scalar_t* x_lo = x + (bt * H + h) * D;
      const scalar_t* x_hi = x_lo + half;
      scalar_t* out_lo = out + (bt * H + h) * D;
      scalar_t* out_hi = out_lo + half;
#pragma omp simd
      for (int64_t i = 0; i < half; ++i) {
        const double lo = static_cast<double>(x_lo[i]), hi = static_cast<double>(x_hi[i]);
        out_lo[i] = static_cast<scalar_t>(lo * c[i] - hi * s[i]);
        out_hi[i] = static_cast<scalar_t>(hi * c[i] + lo * s[i]);
      }
    }
  }
}

template void rotary<float>(float*, const float*, const RotaryDims&, int64_t, const double*, bool, const int64_t*);
template void rotary<double>(double*, const double*, const RotaryDims&, int64_t, const double*, bool, const int64_t*);

}  // namespace hetu::ops::cpu
