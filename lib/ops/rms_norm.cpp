// Public rms_norm and rms_norm_backward over the last dim: argument checks, shape inference,
// then the CPU kernel on contiguous copies. x (..., C) is treated as (N, C) with
// N = numel / C; weight is (C); the saved rstd has x's shape without the last dim and x's dtype.
//   auto [out, rstd] = rms_norm(x, w, 1e-6);   // out = x · rsqrt(mean(x²) + eps) · w
#include <cmath>
#include <string_view>

#include "lib/core/dispatch.h"
#include "lib/ops/cpu/rms_norm.h"
#include "lib/ops/cuda/rms_norm.h"
#include "lib/ops/op_checks.h"
#include "lib/ops/ops.h"
#include "lib/ops/f16_storage.h"

namespace hetu::ops {

namespace {

// x's shape without the last dim: the shape of rstd.
Shape row_shape(const Tensor& x) { return Shape(x.shape().begin(), x.shape().end() - 1); }

void check_x_and_weight(std::string_view op, const Tensor& x, const Tensor& weight) {
  HT_CHECK(x.dim() >= 1, "{}: expected x with at least 1 dim, got a 0-d tensor", op);
  HT_CHECK(x.size(-1) > 0, "{}: the last dim of x {} is empty", op, shape_str(x.shape()));
  HT_CHECK(weight.shape() == Shape{x.size(-1)},
           "{}: weight shape {} does not match the last dim of x {} (expected {})", op, shape_str(weight.shape()),
           shape_str(x.shape()), shape_str(Shape{x.size(-1)}));
}

}  // namespace

RmsNormResult rms_norm(const Tensor& x, const Tensor& weight, double eps) {
  if (stores_f16({&x, &weight})) {  // rstd stays f32 (stat_dtype)
    RmsNormResult r = rms_norm(widened(x), widened(weight), eps);
    return {narrowed(r.out), r.rstd};
  }
  constexpr std::string_view op = "rms_norm";
  check_inputs(op, {&x, &weight}, Backends::cpu_and_cuda);
  check_float_dtype(op, {&x, &weight});
  check_x_and_weight(op, x, weight);
  HT_CHECK(eps >= 0 && std::isfinite(eps), "{}: eps must be finite and >= 0, got {}", op, eps);
  const Tensor xc = x.contiguous(), wc = weight.contiguous();
  const int64_t C = x.size(-1), N = shape_numel(row_shape(x));
  RmsNormResult r{empty(x.shape(), x.dtype(), x.device()), empty(row_shape(x), stat_dtype(x), x.device())};
  if constexpr (hetu::cuda::kBuilt) {
    if (x.device().is_cuda()) {
      hetu::cuda::DeviceGuard guard(x.device());
      cuda::rms_norm_forward(x.dtype(), r.out.raw_data(), r.rstd.data<float>(), xc.raw_data(), wc.raw_data(), N, C,
                             static_cast<float>(eps));
      return r;
    }
  }
  HT_DISPATCH_FLOAT(x.dtype(), op, x.device(), [&] {
    cpu::rms_norm_forward<scalar_t>(r.out.data<scalar_t>(), r.rstd.data<scalar_t>(), xc.data<scalar_t>(),
                                    wc.data<scalar_t>(), N, C, eps);
  });
  return r;
}

RmsNormGrads rms_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& weight, const Tensor& rstd) {
  if (stores_f16({&grad, &x, &weight})) {
    const RmsNormGrads g = rms_norm_backward(widened(grad), widened(x), widened(weight), rstd);
    return {narrowed(g.dx), narrowed(g.dweight)};
  }
  constexpr std::string_view op = "rms_norm_backward";
  check_inputs(op, {&grad, &x, &weight, &rstd}, Backends::cpu_and_cuda);
  check_float_dtype(op, {&grad, &x, &weight});
  HT_CHECK(rstd.dtype() == stat_dtype(x), "{}: dtypes differ: rstd must be {} for x of {} on {}, got {}", op,
           to_string(stat_dtype(x)), to_string(x.dtype()), x.device().str(), to_string(rstd.dtype()));
  check_x_and_weight(op, x, weight);
  HT_CHECK(grad.shape() == x.shape(), "{}: grad shape {} does not match x shape {}", op, shape_str(grad.shape()),
           shape_str(x.shape()));
  HT_CHECK(rstd.shape() == row_shape(x), "{}: rstd shape {} does not match x {} without its last dim", op,
           shape_str(rstd.shape()), shape_str(x.shape()));
  const Tensor gc = grad.contiguous(), xc = x.contiguous(), wc = weight.contiguous(), rc = rstd.contiguous();
  const int64_t C = x.size(-1), N = shape_numel(row_shape(x));
  RmsNormGrads g{empty(x.shape(), x.dtype(), x.device()), empty({C}, x.dtype(), x.device())};
  if constexpr (hetu::cuda::kBuilt) {
    if (x.device().is_cuda()) {
      hetu::cuda::DeviceGuard guard(x.device());
      cuda::rms_norm_backward(x.dtype(), g.dx.raw_data(), g.dweight.raw_data(), gc.raw_data(), xc.raw_data(),
                              wc.raw_data(), rc.data<float>(), N, C);
      return g;
    }
  }
  HT_DISPATCH_FLOAT(x.dtype(), op, x.device(), [&] {
    cpu::rms_norm_backward<scalar_t>(g.dx.data<scalar_t>(), g.dweight.data<scalar_t>(), gc.data<scalar_t>(),
                                     xc.data<scalar_t>(), wc.data<scalar_t>(), rc.data<scalar_t>(), N, C);
  });
  return g;
}

}  // namespace hetu::ops
