// Row kernels of the CUDA attention (attention.cu), plain C++ so .cu files can include it;
// the gemm path and the public contract are in attention.h / attention.cpp. The flash kernels
// (flash_attention.cu) use attention_row_dot for their Di as well.
#pragma once

#include <cstdint>

#include "lib/core/dtype.h"

namespace hetu::ops::cuda {

// A "row" is one query of one head: rows = B·H·T, grouped per
// (b, kv head) as R = (H / Hkv)·T consecutive rows, row r of a group at position
// Tk - T + r % T. Scores S are f32, scaled, (rows, Tk); columns past the position are masked.
// P (rows, Tk) of `dtype` = exp(S - lse) and lse = logsumexp of the unmasked row.
void attention_softmax(DType dtype, void* P, float* lse, const float* S, int64_t rows, int64_t T, int64_t Tk);
// P = exp(S - lse) masked; with dP: P = exp(S - lse)·(dP - Di) (the scores' gradient), masked.
void attention_probs(DType dtype, void* P, const float* S, const float* lse, const float* dP, const float* Di,
                     int64_t rows, int64_t T, int64_t Tk);
// Di = Σ_d dout·out per row (rows, D).
void attention_row_dot(DType dtype, float* Di, const void* dout, const void* out, int64_t rows, int64_t D);

}  // namespace hetu::ops::cuda
