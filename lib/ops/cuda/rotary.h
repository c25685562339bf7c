// CUDA rotary position embedding (rotary.cu): x, out contiguous (B, T, H, D), D even,
// f32 or bf16; semantics of ops::rotary (rotate-half pairs (i, i + D/2)).
#pragma once

#include <cstdint>

#include "lib/core/dtype.h"

namespace hetu::ops::cuda {

void rotary(DType dtype, void* out, const void* x, int64_t B, int64_t T, int64_t H, int64_t D, int64_t position_offset,
            double theta, bool inverse);

}  // namespace hetu::ops::cuda
