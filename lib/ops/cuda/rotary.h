// CUDA rotary position embedding (rotary.cu): x, out contiguous (B, T, H, D), D even,
// f32 or bf16; semantics of ops::rotary (rotate-half pairs (i, i + D/2)).
#pragma once

#include <cstdint>

#include "lib/core/dtype.h"

namespace hetu::ops::cuda {

inline constexpr int64_t kRotaryMaxPairs = 256;  // D/2 frequencies the kernel's arguments hold

// inv_freq: D/2 host values (D/2 <= ops::kRotaryMaxPairs), passed by value to the kernel.
// positions: null (row t is at position_offset + t) or B·T host values (copied to the device).
void rotary(DType dtype, void* out, const void* x, int64_t B, int64_t T, int64_t H, int64_t D, int64_t position_offset,
            const double* inv_freq, bool inverse, const int64_t* positions = nullptr);

}  // namespace hetu::ops::cuda
