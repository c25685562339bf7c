// Elementwise kernels. Same-shape contiguous operands take a flat OpenMP loop; broadcast
// operands walk rows with stride-0 dims (a bias (C) added to (B, T, C) is a row of C). The
// output may be any view, and may alias the first operand (ops::add_).
#include "lib/ops/cpu/elementwise.h"

#include <cmath>

#include "lib/core/dispatch.h"
#include "lib/core/strided_loop.h"

namespace hetu::ops::cpu {
namespace {

constexpr int64_t kParallelMin = 1 << 15;  // below this, threads cost more than they save

template <typename T, typename Fn>
void flat_loop(const T* x, T* y, int64_t n, Fn fn) {
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) y[i] = fn(x[i]);
}

// Strided or broadcast operands, row by row. Rows where every operand is unit-stride (a bias
// (C) added to (B, T, C): each row of C meets the whole bias) or one operand is a broadcast
// scalar (a per-row statistic) get loops that vectorise; other rows take the strided loop.
template <typename T, typename Fn>
void binary_rows(const Tensor& a, const Tensor& b, const Tensor& out, Fn fn) {
  const T* pa = static_cast<const T*>(a.storage()->data());
  const T* pb = static_cast<const T*>(b.storage()->data());
  T* po = static_cast<T*>(out.storage()->data());
  for_each_row<3>(out.shape(), {a.strides(), b.strides(), out.strides()}, {a.offset(), b.offset(), out.offset()},
                  [&](auto off, int64_t len, auto step) {
                    const T* xa = pa + off[0];
                    const T* xb = pb + off[1];
                    T* y = po + off[2];
                    if (step[0] == 1 && step[1] == 1 && step[2] == 1) {
                      for (int64_t i = 0; i < len; ++i) y[i] = fn(xa[i], xb[i]);
                    } else if (step[0] == 1 && step[1] == 0 && step[2] == 1) {
                      const T vb = xb[0];
                      for (int64_t i = 0; i < len; ++i) y[i] = fn(xa[i], vb);
                    } else if (step[0] == 0 && step[1] == 1 && step[2] == 1) {
                      const T va = xa[0];
                      for (int64_t i = 0; i < len; ++i) y[i] = fn(va, xb[i]);
                    } else {
                      for (int64_t i = 0; i < len; ++i) y[i * step[2]] = fn(xa[i * step[0]], xb[i * step[1]]);
                    }
                  });
}

template <typename T>
void binary_impl(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  const T* pa = static_cast<const T*>(a.storage()->data());
  const T* pb = static_cast<const T*>(b.storage()->data());
  T* po = out.data<T>();
  const int64_t n = out.numel();
  if (a.is_contiguous() && b.is_contiguous() && out.is_contiguous()) {
    const T* xa = pa + a.offset();
    const T* xb = pb + b.offset();
    switch (op) {  // one loop per op so each vectorises
      case BinaryOp::add:
#pragma omp parallel for schedule(static) if (n > kParallelMin)
        for (int64_t i = 0; i < n; ++i) po[i] = xa[i] + xb[i];
        return;
      case BinaryOp::sub:
#pragma omp parallel for schedule(static) if (n > kParallelMin)
        for (int64_t i = 0; i < n; ++i) po[i] = xa[i] - xb[i];
        return;
      case BinaryOp::mul:
#pragma omp parallel for schedule(static) if (n > kParallelMin)
        for (int64_t i = 0; i < n; ++i) po[i] = xa[i] * xb[i];
        return;
      case BinaryOp::div:
#pragma omp parallel for schedule(static) if (n > kParallelMin)
        for (int64_t i = 0; i < n; ++i) po[i] = xa[i] / xb[i];
        return;
    }
  }
  switch (op) {
    case BinaryOp::add: return binary_rows<T>(a, b, out, [](T x, T y) { return x + y; });
    case BinaryOp::sub: return binary_rows<T>(a, b, out, [](T x, T y) { return x - y; });
    case BinaryOp::mul: return binary_rows<T>(a, b, out, [](T x, T y) { return x * y; });
    case BinaryOp::div: return binary_rows<T>(a, b, out, [](T x, T y) { return x / y; });
  }
}

template <typename T>
void unary_impl(UnaryOp op, const Tensor& x, const Tensor& out, double scalar) {
  const T* px = x.data<T>();
  T* py = out.data<T>();
  const int64_t n = x.numel();
  const T s = static_cast<T>(scalar);
  switch (op) {
    case UnaryOp::neg: return flat_loop(px, py, n, [](T v) { return -v; });
    case UnaryOp::exp: return flat_loop(px, py, n, [](T v) { return std::exp(v); });
    case UnaryOp::log: return flat_loop(px, py, n, [](T v) { return std::log(v); });
    case UnaryOp::sqrt: return flat_loop(px, py, n, [](T v) { return std::sqrt(v); });
    case UnaryOp::rsqrt: return flat_loop(px, py, n, [](T v) { return T(1) / std::sqrt(v); });
    case UnaryOp::tanh: return flat_loop(px, py, n, [](T v) { return std::tanh(v); });
    case UnaryOp::relu: return flat_loop(px, py, n, [](T v) { return v > T(0) ? v : T(0); });
    case UnaryOp::add_scalar: return flat_loop(px, py, n, [s](T v) { return v + s; });
    case UnaryOp::mul_scalar: return flat_loop(px, py, n, [s](T v) { return v * s; });
  }
}

template <typename T>
void relu_backward_impl(const T* g, const T* x, T* out, int64_t n) {
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] > T(0) ? g[i] : T(0);
}

}  // namespace

void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  HT_DISPATCH_FLOAT(out.dtype(), "binary", out.device(), [&] { binary_impl<scalar_t>(op, a, b, out); });
}

void relu_backward(const Tensor& grad, const Tensor& x, const Tensor& out) {
  HT_DISPATCH_FLOAT(out.dtype(), "relu_backward", out.device(), [&] {
    const scalar_t* g = grad.data<scalar_t>();
    const scalar_t* px = x.data<scalar_t>();
    scalar_t* po = out.data<scalar_t>();
    relu_backward_impl(g, px, po, out.numel());
  });
}

void unary(UnaryOp op, const Tensor& x, const Tensor& out, double scalar) {
  HT_DISPATCH_FLOAT(out.dtype(), "unary", out.device(), [&] { unary_impl<scalar_t>(op, x, out, scalar); });
}

}  // namespace hetu::ops::cpu
