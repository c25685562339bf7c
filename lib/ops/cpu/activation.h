// CPU kernels for the activations with fused backward: GELU (tanh approximation) and SiLU.
// All buffers are contiguous and hold n elements of the same shape (any shape, flattened):
// out = f(x); dx = grad · f'(x) (activation gradients are written, never accumulated).
#pragma once

#include <cstdint>

namespace hetu::ops::cpu {

// gelu(x) = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
template <typename scalar_t> void gelu_forward(scalar_t* out, const scalar_t* x, int64_t n);
template <typename scalar_t> void gelu_backward(scalar_t* dx, const scalar_t* grad, const scalar_t* x, int64_t n);

// silu(x) = x·σ(x), σ(x) = 1 / (1 + e^(-x))
template <typename scalar_t> void silu_forward(scalar_t* out, const scalar_t* x, int64_t n);
template <typename scalar_t> void silu_backward(scalar_t* dx, const scalar_t* grad, const scalar_t* x, int64_t n);

}  // namespace hetu::ops::cpu
