// Public layer_norm and layer_norm_backward over the last dim: argument checks, shape
// inference, then the CPU kernel on contiguous copies. x (..., C) is treated as (N, C) with
// N = numel / C; weight and bias are (C); the saved mean and rstd have x's shape without the
// last dim and x's dtype.
//   auto [out, mean, rstd] = layer_norm(x, w, b, 1e-5);   // x (B, T, C) -> mean (B, T)
#include <cmath>
#include <string_view>

#include "lib/core/dispatch.h"
#include "lib/ops/cpu/layer_norm.h"
#include "lib/ops/cuda/layer_norm.h"
#include "lib/ops/op_checks.h"
#include "lib/ops/ops.h"
#include "lib/ops/f16_storage.h"

namespace hetu::ops {

namespace {

// x's shape without the last dim: the shape of the per-row statistics.
Shape row_shape(const Tensor& x) { return Shape(x.shape().begin(), x.shape().end() - 1); }

void check_x(std::string_view op, const Tensor& x) {
  HT_CHECK(x.dim() >= 1, "{}: expected x with at least 1 dim, got a 0-d tensor", op);
  HT_CHECK(x.size(-1) > 0, "{}: the last dim of x {} is empty", op, shape_str(x.shape()));
}

void check_param(std::string_view op, std::string_view name, const Tensor& p, const Tensor& x) {
  HT_CHECK(p.shape() == Shape{x.size(-1)}, "{}: {} shape {} does not match the last dim of x {} (expected {})", op,
           name, shape_str(p.shape()), shape_str(x.shape()), shape_str(Shape{x.size(-1)}));
}

void check_stat(std::string_view op, std::string_view name, const Tensor& s, const Tensor& x) {
  HT_CHECK(s.shape() == row_shape(x), "{}: {} shape {} does not match x {} without its last dim", op, name,
           shape_str(s.shape()), shape_str(x.shape()));
}

}  // namespace

LayerNormResult layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  if (stores_f16({&x, &weight, &bias})) {  // mean and rstd stay f32 (stat_dtype)
    LayerNormResult r = layer_norm(widened(x), widened(weight), widened(bias), eps);
    return {narrowed(r.out), r.mean, r.rstd};
  }
  constexpr std::string_view op = "layer_norm";
  check_inputs(op, {&x, &weight, &bias}, Backends::cpu_and_cuda);
  check_float_dtype(op, {&x, &weight, &bias});
  check_x(op, x);
  check_param(op, "weight", weight, x);
  check_param(op, "bias", bias, x);
  HT_CHECK(eps >= 0 && std::isfinite(eps), "{}: eps must be finite and >= 0, got {}", op, eps);
  const Tensor xc = x.contiguous(), wc = weight.contiguous(), bc = bias.contiguous();
  const int64_t C = x.size(-1), N = shape_numel(row_shape(x));
  LayerNormResult r{empty(x.shape(), x.dtype(), x.device()), empty(row_shape(x), stat_dtype(x), x.device()),
                    empty(row_shape(x), stat_dtype(x), x.device())};
  if constexpr (hetu::cuda::kBuilt) {
    if (x.device().is_cuda()) {
      hetu::cuda::DeviceGuard guard(x.device());
      cuda::layer_norm_forward(x.dtype(), r.out.raw_data(), r.mean.data<float>(), r.rstd.data<float>(), xc.raw_data(),
                               wc.raw_data(), bc.raw_data(), N, C, static_cast<float>(eps));
      return r;
    }
  }
  HT_DISPATCH_FLOAT(x.dtype(), op, x.device(), [&] {
    cpu::layer_norm_forward<scalar_t>(r.out.data<scalar_t>(), r.mean.data<scalar_t>(), r.rstd.data<scalar_t>(),
                                      xc.data<scalar_t>(), wc.data<scalar_t>(), bc.data<scalar_t>(), N, C, eps);
  });
  return r;
}

LayerNormGrads layer_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& weight, const Tensor& mean,
                                   const Tensor& rstd) {
  if (stores_f16({&grad, &x, &weight})) {
    const LayerNormGrads g = layer_norm_backward(widened(grad), widened(x), widened(weight), mean, rstd);
    return {narrowed(g.dx), narrowed(g.dweight), narrowed(g.dbias)};
  }
  constexpr std::string_view op = "layer_norm_backward";
  check_inputs(op, {&grad, &x, &weight, &mean, &rstd}, Backends::cpu_and_cuda);
  check_float_dtype(op, {&grad, &x, &weight});
  for (const Tensor* s : {&mean, &rstd}) {
    HT_CHECK(s->dtype() == stat_dtype(x), "{}: dtypes differ: mean and rstd must be {} for x of {} on {}, got {}", op,
             to_string(stat_dtype(x)), to_string(x.dtype()), x.device().str(), to_string(s->dtype()));
  }
  check_x(op, x);
  HT_CHECK(grad.shape() == x.shape(), "{}: grad shape {} does not match x shape {}", op, shape_str(grad.shape()),
           shape_str(x.shape()));
  check_param(op, "weight", weight, x);
  check_stat(op, "mean", mean, x);
  check_stat(op, "rstd", rstd, x);
  const Tensor gc = grad.contiguous(), xc = x.contiguous(), wc = weight.contiguous();
  const Tensor mc = mean.contiguous(), rc = rstd.contiguous();
  const int64_t C = x.size(-1), N = shape_numel(row_shape(x));
  LayerNormGrads g{empty(x.shape(), x.dtype(), x.device()), empty({C}, x.dtype(), x.device()),
                   empty({C}, x.dtype(), x.device())};
  if constexpr (hetu::cuda::kBuilt) {
    if (x.device().is_cuda()) {
      hetu::cuda::DeviceGuard guard(x.device());
      cuda::layer_norm_backward(x.dtype(), g.dx.raw_data(), g.dweight.raw_data(), g.dbias.raw_data(), gc.raw_data(),
                                xc.raw_data(), wc.raw_data(), mc.data<float>(), rc.data<float>(), N, C);
      return g;
    }
  }
  HT_DISPATCH_FLOAT(x.dtype(), op, x.device(), [&] {
    cpu::layer_norm_backward<scalar_t>(g.dx.data<scalar_t>(), g.dweight.data<scalar_t>(), g.dbias.data<scalar_t>(),
                                       gc.data<scalar_t>(), xc.data<scalar_t>(), wc.data<scalar_t>(),
                                       mc.data<scalar_t>(), rc.data<scalar_t>(), N, C);
  });
  return g;
}

}  // namespace hetu::ops
