// CUDA causal attention with grouped-query heads (attention.cpp + attention.cu), contract of
// ops::attention / attention_backward: q, out, dout, dq (B, H, T, D); k, v, dk, dv
// (B, Hkv, Tk, D); lse (B, H, T) f32. All contiguous, f32 or bf16, on the current device.
// Note [CUDA attention is not fused yet]: the scores are materialised (cuBLAS batched GEMMs
// + row softmax kernels, f32 scores, O(T²) memory per head), not a flash-style tiled kernel.
#pragma once

#include <cstdint>

#include "lib/core/tensor.h"

namespace hetu::ops::cuda {

struct AttentionShape {
  int64_t B, H, Hkv, T, D, Tk;  // Tk >= T: query t sits at position Tk - T + t
};

void attention_forward(const AttentionShape& s, double scale, const Tensor& q, const Tensor& k, const Tensor& v,
                       const Tensor& out, const Tensor& lse);
// Needs Tk == T.
void attention_backward(const AttentionShape& s, double scale, const Tensor& dout, const Tensor& q, const Tensor& k,
                        const Tensor& v, const Tensor& out, const Tensor& lse, const Tensor& dq, const Tensor& dk,
                        const Tensor& dv);

}  // namespace hetu::ops::cuda
