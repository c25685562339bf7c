// Elementwise ops: broadcasting binary ops (add, sub, mul, div), add_ in place, scalar forms and unary math.
#include "lib/ops/cpu/elementwise.h"
#include "lib/core/cuda/strided.h"
#include "lib/ops/cuda/elementwise.h"
#include "lib/ops/op_checks.h"
#include "lib/ops/ops.h"
#include "lib/ops/f16_storage.h"

namespace hetu::ops {
namespace {

Tensor binary_op(std::string_view name, cpu::BinaryOp op, const Tensor& a, const Tensor& b) {
  if (stores_f16({&a, &b})) return narrowed(binary_op(name, op, widened(a), widened(b)));
  check_inputs(name, {&a, &b}, Backends::cpu_and_cuda);
  check_float_dtype(name, {&a, &b});
  const Shape shape = broadcast_shapes(a.shape(), b.shape());
  Tensor out = empty(shape, a.dtype(), a.device());
  const Tensor ea = a.shape() == shape ? a : a.expand(shape);
  const Tensor eb = b.shape() == shape ? b : b.expand(shape);
  if constexpr (hetu::cuda::kBuilt) {
    if (out.device().is_cuda()) {
      hetu::cuda::DeviceGuard guard(out.device());
      cuda::binary(static_cast<cuda::BinaryKind>(op), out.dtype(), out.raw_data(), ea.raw_data(), eb.raw_data(),
                   hetu::cuda::make_strided_space(out, {&ea, &eb}));
      return out;
    }
  }
  cpu::binary(op, ea, eb, out);
  return out;
}

Tensor unary_op(std::string_view name, cpu::UnaryOp op, const Tensor& x, double scalar = 0) {
  if (stores_f16({&x})) return narrowed(unary_op(name, op, widened(x), scalar));
  check_inputs(name, {&x}, Backends::cpu_and_cuda);
  check_float_dtype(name, {&x});
  Tensor out = empty(x.shape(), x.dtype(), x.device());
  if constexpr (hetu::cuda::kBuilt) {
    if (out.device().is_cuda()) {
      hetu::cuda::DeviceGuard guard(out.device());
      const Tensor xc = x.contiguous();
      cuda::unary(static_cast<cuda::UnaryKind>(op), x.dtype(), out.raw_data(), xc.raw_data(), x.numel(),
                  static_cast<float>(scalar));
      return out;
    }
  }
  cpu::unary(op, x.contiguous(), out, scalar);
  return out;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) { return binary_op("add", cpu::BinaryOp::add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary_op("sub", cpu::BinaryOp::sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary_op("mul", cpu::BinaryOp::mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary_op("div", cpu::BinaryOp::div, a, b); }
Tensor add_scalar(const Tensor& a, double s) { return unary_op("add_scalar", cpu::UnaryOp::add_scalar, a, s); }
Tensor mul_scalar(const Tensor& a, double s) { return unary_op("mul_scalar", cpu::UnaryOp::mul_scalar, a, s); }
Tensor neg(const Tensor& x) { return unary_op("neg", cpu::UnaryOp::neg, x); }
Tensor exp(const Tensor& x) { return unary_op("exp", cpu::UnaryOp::exp, x); }
Tensor log(const Tensor& x) { return unary_op("log", cpu::UnaryOp::log, x); }
Tensor sqrt(const Tensor& x) { return unary_op("sqrt", cpu::UnaryOp::sqrt, x); }
Tensor rsqrt(const Tensor& x) { return unary_op("rsqrt", cpu::UnaryOp::rsqrt, x); }
Tensor tanh(const Tensor& x) { return unary_op("tanh", cpu::UnaryOp::tanh, x); }
Tensor relu(const Tensor& x) { return unary_op("relu", cpu::UnaryOp::relu, x); }

void add_(const Tensor& dst, const Tensor& src) {
  if (stores_f16({&dst, &src}) && dst.dtype() == src.dtype()) {  // the sum in f32, rounded into dst
    dst.copy_from(binary_op("add_", cpu::BinaryOp::add, dst, src.shape() == dst.shape() ? src : src.expand(dst.shape())));
    return;
  }
  check_inputs("add_", {&dst, &src}, Backends::cpu_and_cuda);
  check_float_dtype("add_", {&dst, &src});
  HT_CHECK(broadcast_shapes(dst.shape(), src.shape()) == dst.shape(), "add_: {} does not broadcast to {}",
           shape_str(src.shape()), shape_str(dst.shape()));
  const Tensor es = src.shape() == dst.shape() ? src : src.expand(dst.shape());
  // Each element is read and written at the same place, so out may alias the first operand.
  if constexpr (hetu::cuda::kBuilt) {
    if (dst.device().is_cuda()) {
      hetu::cuda::DeviceGuard guard(dst.device());
      cuda::binary(cuda::BinaryKind::add, dst.dtype(), dst.raw_data(), dst.raw_data(), es.raw_data(),
                   hetu::cuda::make_strided_space(dst, {&dst, &es}));
      return;
    }
  }
  cpu::binary(cpu::BinaryOp::add, dst, es, dst);
}

Tensor relu_backward(const Tensor& grad, const Tensor& x) {
  if (stores_f16({&grad, &x})) return narrowed(relu_backward(widened(grad), widened(x)));
  check_inputs("relu_backward", {&grad, &x}, Backends::cpu_and_cuda);
  check_float_dtype("relu_backward", {&grad, &x});
  HT_CHECK(grad.shape() == x.shape(), "relu_backward: grad {} and input {} differ", shape_str(grad.shape()),
           shape_str(x.shape()));
  Tensor out = empty(x.shape(), x.dtype(), x.device());
  if constexpr (hetu::cuda::kBuilt) {
    if (out.device().is_cuda()) {
      hetu::cuda::DeviceGuard guard(out.device());
      const Tensor gc = grad.contiguous(), xc = x.contiguous();
      cuda::relu_backward(x.dtype(), out.raw_data(), gc.raw_data(), xc.raw_data(), x.numel());
      return out;
    }
  }
  cpu::relu_backward(grad.contiguous(), x.contiguous(), out);
  return out;
}

}  // namespace hetu::ops
