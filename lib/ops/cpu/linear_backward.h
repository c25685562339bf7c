// CPU kernel for the linear layer's weight and bias gradients from one read of the incoming
// gradient (lib/ops/linear_backward.cpp).
#pragma once

#include <cstdint>

namespace hetu::ops::cpu {

// Rows per piece of linear_weight_bias_grads: fixed (not per thread count), and small enough
// that a piece of a 768-wide gradient (768 KiB in f32) is still in a 1 MiB L2 when the GEMM
// packs it right after its column sums; large enough that OpenBLAS's own K blocking (a few
// hundred) is not split further.
constexpr int64_t kBiasRowChunk = 256;

// For g (rows, n) and x (rows, k), both row-major and contiguous: dweight (n, k) = gᵀ x and
// dbias (n) = Σ_r g[r, :]. The GEMM runs over consecutive kBiasRowChunk-row pieces (the first
// with beta = 0, the rest adding on with beta = 1), and each piece's column sums are added,
// in double and in row order, just before its GEMM reads it: dbias has the bits of
// sum(g, {0}); dweight those of one GEMM when rows <= kBiasRowChunk. The pieces and the sums
// do not depend on the thread count.
template <typename T>
void linear_weight_bias_grads(T* dweight, T* dbias, const T* g, const T* x, int64_t rows, int64_t n, int64_t k);

}  // namespace hetu::ops::cpu
