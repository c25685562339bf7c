// Fused (flash-style) CUDA causal attention with grouped-query heads: the kernels of
// flash_attention.cu behind plain launchers, so host code and .cu files can both include this
// header (no lib/core/tensor.h: nvcc gets C++17). Layouts as in attention.h: q, out, dout, dq
// (B, H, T, D); k, v, dk, dv (B, Hkv, Tk, D); lse (B, H, T) f32; contiguous, one dtype (f32
// or bf16) for all but lse, on the current device. Scores are never materialised: memory is
// O(B·H·T) besides the inputs and outputs. Query head h reads kv head h / (H / Hkv).
#pragma once

#include <cstdint>

#include "lib/core/dtype.h"

namespace hetu::ops::cuda {

struct AttentionShape {
  int64_t B, H, Hkv, T, D, Tk;  // Tk >= T: query t sits at position Tk - T + t
  // Documents (ops::attention's cu_seqlens; then Tk == T), or null for one per batch row:
  // device arrays of B·T entries, token t of row b belongs to the document of row positions
  // [doc_start[b·T + t], doc_end[b·T + t]) and sees only its keys.
  const int64_t* doc_start = nullptr;
  const int64_t* doc_end = nullptr;
};

// Whether the flash kernels take head dim D on the current device: 1 <= D <= 128 and the
// kernels' shared memory fits the device (the backward for D > 64 needs more than the 64 KiB
// of sm_75). Otherwise the caller uses the cuBLAS path (attention.cpp).
bool flash_attention_supported(int64_t D, bool backward);

// out = softmax(scale·q kᵀ, causal) v; lse = the row's logsumexp of the scaled scores.
void flash_attention_forward(DType dtype, const AttentionShape& s, float scale, const void* q, const void* k,
                             const void* v, void* out, float* lse);
// Writes (=) dq, dk, dv; needs Tk == T. dk, dv sum over the H / Hkv query heads of a kv head.
// Deterministic: no atomics (dq and dk/dv come from two kernels that each recompute P).
void flash_attention_backward(DType dtype, const AttentionShape& s, float scale, const void* dout, const void* q,
                              const void* k, const void* v, const void* out, const float* lse, void* dq, void* dk,
                              void* dv);

}  // namespace hetu::ops::cuda
