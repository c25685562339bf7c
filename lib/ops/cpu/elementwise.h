// CPU elementwise kernels: broadcasting binary ops, scalar ops and unary math.
#pragma once

#include "lib/core/tensor.h"

namespace hetu::ops::cpu {

enum class BinaryOp { add, sub, mul, div };
enum class UnaryOp { neg, exp, log, sqrt, rsqrt, tanh, relu, add_scalar, mul_scalar };

// out (contiguous, broadcast shape) = a op b; a and b already expanded to out's shape.
void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out);
// out (contiguous) = op(x) for contiguous x; `scalar` feeds add_scalar / mul_scalar.
void unary(UnaryOp op, const Tensor& x, const Tensor& out, double scalar = 0);
// out = grad · [x > 0] for contiguous grad, x of one shape.
void relu_backward(const Tensor& grad, const Tensor& x, const Tensor& out);

}  // namespace hetu::ops::cpu
