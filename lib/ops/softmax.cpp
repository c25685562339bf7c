// Public softmax and log_softmax over the last dim, and their backwards: argument checks,
// then the CPU kernel on contiguous copies. Leading dims are rows: x (..., C) is (N, C) with
// N = numel / C. See lib/ops/cpu/softmax.cpp for the kernels.
#include <string_view>

#include "lib/core/dispatch.h"
#include "lib/ops/cpu/softmax.h"
#include "lib/ops/cuda/softmax.h"
#include "lib/ops/op_checks.h"
#include "lib/ops/ops.h"
#include "lib/ops/f16_storage.h"

namespace hetu::ops {

namespace {

// Leading dims flattened: the number of rows of a (..., C) tensor (empty C allowed).
int64_t num_rows(const Tensor& x) {
  const Shape& s = x.shape();
  return shape_numel(Shape(s.begin(), s.end() - 1));
}

// Forward: out = softmax(x) or, with kLog, log_softmax(x), row by row.
template <bool kLog> Tensor rowwise_forward(std::string_view op, const Tensor& x) {
  if (stores_f16({&x})) return narrowed(rowwise_forward<kLog>(op, widened(x)));
  check_inputs(op, {&x}, Backends::cpu_and_cuda);
  check_float_dtype(op, {&x});
  HT_CHECK(x.dim() >= 1, "{}: expected a tensor with at least 1 dim, got a 0-d tensor", op);
  const Tensor xc = x.contiguous();
  Tensor out = empty(x.shape(), x.dtype(), x.device());
  const int64_t C = x.size(-1), N = num_rows(x);
  if constexpr (hetu::cuda::kBuilt) {
    if (x.device().is_cuda()) {
      hetu::cuda::DeviceGuard guard(x.device());
      cuda::softmax_forward(x.dtype(), out.raw_data(), xc.raw_data(), N, C, kLog);
      return out;
    }
  }
  HT_DISPATCH_FLOAT(x.dtype(), op, x.device(), [&] {
    if constexpr (kLog) {
      cpu::log_softmax_forward<scalar_t>(out.data<scalar_t>(), xc.data<scalar_t>(), N, C);
    } else {
      cpu::softmax_forward<scalar_t>(out.data<scalar_t>(), xc.data<scalar_t>(), N, C);
    }
  });
  return out;
}

// Backward from the forward's output y (softmax or, with kLog, log_softmax): dx has y's shape.
template <bool kLog> Tensor rowwise_backward(std::string_view op, const Tensor& grad, const Tensor& y) {
  if (stores_f16({&grad, &y})) return narrowed(rowwise_backward<kLog>(op, widened(grad), widened(y)));
  check_inputs(op, {&grad, &y}, Backends::cpu_and_cuda);
  check_float_dtype(op, {&grad, &y});
  HT_CHECK(y.dim() >= 1, "{}: expected a tensor with at least 1 dim, got a 0-d tensor", op);
  HT_CHECK(grad.shape() == y.shape(), "{}: grad shape {} does not match output shape {}", op,
           shape_str(grad.shape()), shape_str(y.shape()));
  const Tensor gc = grad.contiguous(), yc = y.contiguous();
  Tensor dx = empty(y.shape(), y.dtype(), y.device());
  const int64_t C = y.size(-1), N = num_rows(y);
  if constexpr (hetu::cuda::kBuilt) {
    if (y.device().is_cuda()) {
      hetu::cuda::DeviceGuard guard(y.device());
      cuda::softmax_backward(y.dtype(), dx.raw_data(), gc.raw_data(), yc.raw_data(), N, C, kLog);
      return dx;
    }
  }
  HT_DISPATCH_FLOAT(y.dtype(), op, y.device(), [&] {
    if constexpr (kLog) {
      cpu::log_softmax_backward<scalar_t>(dx.data<scalar_t>(), gc.data<scalar_t>(), yc.data<scalar_t>(), N, C);
    } else {
      cpu::softmax_backward<scalar_t>(dx.data<scalar_t>(), gc.data<scalar_t>(), yc.data<scalar_t>(), N, C);
    }
  });
  return dx;
}

}  // namespace

Tensor softmax(const Tensor& x) { return rowwise_forward<false>("softmax", x); }
Tensor softmax_backward(const Tensor& grad, const Tensor& y) {
  return rowwise_backward<false>("softmax_backward", grad, y);
}
Tensor log_softmax(const Tensor& x) { return rowwise_forward<true>("log_softmax", x); }
Tensor log_softmax_backward(const Tensor& grad, const Tensor& y) {
  return rowwise_backward<true>("log_softmax_backward", grad, y);
}

}  // namespace hetu::ops
