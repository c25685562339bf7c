// CPU kernels for the activations with fused backward: GELU (tanh approximation) and SiLU.
// All buffers are contiguous and hold n elements of the same shape (any shape, flattened):
// out = f(x); dx = grad · f'(x) (activation gradients are written, never accumulated).
#pragma once

#include <cstdint>

namespace hetu::ops::cpu {

// gelu(x) = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
template <typename scalar_t> void gelu_forward(scalar_t* out, const scalar_t* x, int64_t n);
template <typename scalar_t> void gelu_backward(scalar_t* dx, const scalar_t* grad, const scalar_t* x, int64_t n);
// gelu_backward over (rows, cols) buffers, and column_sums[c] = Σ_r dx[r, c] (cols entries,
// summed in double in fixed row chunks, so the same at any thread count) from the same pass.
template <typename scalar_t>
void gelu_backward_column_sums(scalar_t* dx, scalar_t* column_sums, const scalar_t* grad, const scalar_t* x,
                               int64_t rows, int64_t cols);

// silu(x) = x·σ(x), σ(x) = 1 / (1 + e^(-x))
template <typename scalar_t> void silu_forward(scalar_t* out, const scalar_t* x, int64_t n);
template <typename scalar_t> void silu_backward(scalar_t* dx, const scalar_t* grad, const scalar_t* x, int64_t n);

}  // namespace hetu::ops::cpu
