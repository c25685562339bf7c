// CUDA elementwise kernels (elementwise.cu): broadcasting binary ops, unary math, relu
// backward. Pointers are element 0 of each view; dtype f32 or bf16 (computed in f32).
#pragma once

#include <cstdint>

#include "lib/core/cuda/strided.h"
#include "lib/core/dtype.h"

namespace hetu::ops::cuda {

enum class BinaryKind : uint8_t { add, sub, mul, div };
enum class UnaryKind : uint8_t { neg, exp, log, sqrt, rsqrt, tanh, relu, add_scalar, mul_scalar };

// Operands of `space`: 0 = out, 1 = a, 2 = b (a and b expanded to out's shape).
void binary(BinaryKind kind, DType dtype, void* out, const void* a, const void* b, const hetu::cuda::StridedSpace& space);
// out, x contiguous, n elements; `scalar` feeds add_scalar and mul_scalar.
void unary(UnaryKind kind, DType dtype, void* out, const void* x, int64_t n, float scalar);
void relu_backward(DType dtype, void* dx, const void* grad, const void* x, int64_t n);

}  // namespace hetu::ops::cuda
