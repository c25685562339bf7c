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
// With documents, columns before the row's document start are masked as well.
// P (rows, Tk) of `dtype` = exp(S - lse) and lse = logsumexp of the unmasked row.
struct Documents {
  const int64_t* start = nullptr;  // AttentionShape::doc_start (B·T, device), or null: none
  int64_t heads = 1;               // H: the rows of batch row b are b·H·T .. (b + 1)·H·T - 1
};
void attention_softmax(DType dtype, void* P, float* lse, const float* S, int64_t rows, int64_t T, int64_t Tk,
                       Documents docs);
// P = exp(S - lse) masked; with dP: P = exp(S - lse)·(dP - Di) (the scores' gradient), masked.
void attention_probs(DType dtype, void* P, const float* S, const float* lse, const float* dP, const float* Di,
                     int64_t rows, int64_t T, int64_t Tk, Documents docs);
// Di = Σ_d dout·out per row (rows, D).
void attention_row_dot(DType dtype, float* Di, const void* dout, const void* out, int64_t rows, int64_t D);

}  // namespace hetu::ops::cuda
