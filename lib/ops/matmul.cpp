// matmul and linear: argument checks, batch broadcasting, and the choice of a copy-free BLAS layout.
#include "lib/ops/cpu/matmul.h"
#include "lib/ops/cuda/matmul.h"
#include "lib/ops/op_checks.h"
#include "lib/ops/ops.h"
#include "lib/ops/f16_storage.h"

namespace hetu::ops {
namespace {

// Operands whose last two dims have no unit stride (e.g. a slice with step) are copied.
Tensor blas_ready(const Tensor& t) { return cpu::blas_layout(t) ? t : t.contiguous(); }

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  if (stores_f16({&a, &b})) return narrowed(matmul(widened(a), widened(b), trans_a, trans_b));
  check_inputs("matmul", {&a, &b}, Backends::cpu_and_cuda);
  check_float_dtype("matmul", {&a, &b});
  HT_CHECK(a.dim() >= 2 && b.dim() >= 2, "matmul: operands need at least 2 dims, got {} and {}", shape_str(a.shape()),
           shape_str(b.shape()));
  const int64_t m = trans_a ? a.size(-1) : a.size(-2);
  const int64_t ka = trans_a ? a.size(-2) : a.size(-1);
  const int64_t kb = trans_b ? b.size(-1) : b.size(-2);
  const int64_t n = trans_b ? b.size(-2) : b.size(-1);
  HT_CHECK(ka == kb, "matmul: inner dims differ: {} vs {} (shapes {}{} and {}{})", ka, kb, shape_str(a.shape()),
           trans_a ? "ᵀ" : "", shape_str(b.shape()), trans_b ? "ᵀ" : "");
  const Shape batch_a(a.shape().begin(), a.shape().end() - 2);
  const Shape batch_b(b.shape().begin(), b.shape().end() - 2);
  Shape out_shape = broadcast_shapes(batch_a, batch_b);
  Shape a_full = out_shape, b_full = out_shape;
  a_full.insert(a_full.end(), a.shape().end() - 2, a.shape().end());
  b_full.insert(b_full.end(), b.shape().end() - 2, b.shape().end());
  out_shape.push_back(m);
  out_shape.push_back(n);
  Tensor out = empty(out_shape, a.dtype(), a.device());
  if constexpr (hetu::cuda::kBuilt) {
    if (out.device().is_cuda()) {
      if (b.dim() == 2 && a.dim() > 2 && !trans_a && a.is_contiguous()) {
        cuda::matmul(a.view({-1, ka}), blas_ready(b), false, trans_b, out.view({-1, n}));
      } else {
        cuda::matmul(blas_ready(a).expand(a_full), blas_ready(b).expand(b_full), trans_a, trans_b, out);
      }
      return out;
    }
  }
  // A 2-d weight against a contiguous (..., M, K) input: one GEMM over all rows (linear layers).
  if (b.dim() == 2 && a.dim() > 2 && !trans_a && a.is_contiguous()) {
    const Tensor a2 = a.view({-1, ka});
    cpu::matmul(a2, blas_ready(b), false, trans_b, out.view({-1, n}));
    return out;
  }
  cpu::matmul(blas_ready(a).expand(a_full), blas_ready(b).expand(b_full), trans_a, trans_b, out);
  return out;
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual) {
  if (stores_f16({&x, &weight, &bias, &residual})) {
    return narrowed(linear(widened(x), widened(weight), widened(bias), widened(residual)));
  }
  check_inputs("linear", {&x, &weight}, Backends::cpu_and_cuda);
  check_float_dtype("linear", {&x, &weight});
  HT_CHECK(x.dim() >= 1 && weight.dim() == 2 && x.size(-1) == weight.size(1),
           "linear: input {} does not match a weight {} (want (..., K) and (N, K))", shape_str(x.shape()),
           shape_str(weight.shape()));
  const int64_t n = weight.size(0), k = weight.size(1);
  if (bias.defined()) {
    check_inputs("linear", {&x, &bias}, Backends::cpu_and_cuda);
    check_float_dtype("linear", {&x, &bias});
    HT_CHECK(bias.dim() == 1 && bias.size(0) == n, "linear: bias {} for a weight {} (want ({},))",
             shape_str(bias.shape()), shape_str(weight.shape()), n);
  }
  Shape out_shape(x.shape().begin(), x.shape().end() - 1);
  out_shape.push_back(n);
  if (residual.defined()) {
    check_inputs("linear", {&x, &residual}, Backends::cpu_and_cuda);
    check_float_dtype("linear", {&x, &residual});
    HT_CHECK(residual.shape() == out_shape, "linear: residual {} for an output {}", shape_str(residual.shape()),
             shape_str(out_shape));
  }
  Tensor out = empty(out_shape, x.dtype(), x.device());
  const int64_t rows = shape_numel(Shape(x.shape().begin(), x.shape().end() - 1));
  const Tensor x2 = x.contiguous().view({rows, k});
  const Tensor out2 = out.view({rows, n});
  if constexpr (hetu::cuda::kBuilt) {
    if (out.device().is_cuda()) {
      cuda::matmul(x2, blas_ready(weight), false, true, out2);
      if (bias.defined()) add_(out2, bias);
      if (residual.defined()) add_(out, residual);
      return out;
    }
  }
  cpu::linear(x2, blas_ready(weight), bias.defined() ? bias.contiguous() : bias,
              residual.defined() ? residual.contiguous().view({rows, n}) : residual, out2);
  return out;
}

}  // namespace hetu::ops
