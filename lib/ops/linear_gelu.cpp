// linear_gelu: a linear layer followed by GELU (GPT-2's c_fc), forward and backward. The
// forward is ops::linear, then ops::gelu (pre-activation kept for the backward). The backward
// takes the GELU's derivative and the bias gradient (the column sums of d pre) in one pass on
// the CPU (cpu::gelu_backward_column_sums), where the unfused reference (gelu_backward, then
// linear's rule: a second pass over d pre to sum it) reads the widest activation of the block
// once more; then the two GEMMs, as linear's rule. CUDA composes the unfused ops.
#include "lib/ops/cpu/activation.h"
#include "lib/ops/op_checks.h"
#include "lib/ops/ops.h"
#include "lib/ops/f16_storage.h"

namespace hetu::ops {

LinearGeluResult linear_gelu(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  Tensor pre = linear(x, weight, bias);
  Tensor out = gelu(pre);
  return {std::move(out), std::move(pre)};
}

LinearGrads linear_gelu_backward(const Tensor& grad, const Tensor& x, const Tensor& weight, const Tensor& pre,
                                 bool has_bias) {
  if (stores_f16({&grad, &x, &weight, &pre})) {
    const LinearGrads g = linear_gelu_backward(widened(grad), widened(x), widened(weight), widened(pre), has_bias);
    return {narrowed(g.dx), narrowed(g.dweight), narrowed(g.dbias)};
  }
  check_inputs("linear_gelu_backward", {&grad, &x, &weight, &pre}, Backends::cpu_and_cuda);
  check_float_dtype("linear_gelu_backward", {&grad, &x, &weight, &pre});
  HT_CHECK(grad.shape() == pre.shape() && weight.dim() == 2 && pre.dim() >= 1 && pre.size(-1) == weight.size(0) &&
               x.dim() >= 1 && x.size(-1) == weight.size(1) && x.numel() / weight.size(1) == pre.numel() / weight.size(0),
           "linear_gelu_backward: grad {}, x {}, weight {} and pre-activation {} do not fit (want (..., N), (..., K), "
           "(N, K), (..., N))",
           shape_str(grad.shape()), shape_str(x.shape()), shape_str(weight.shape()), shape_str(pre.shape()));
  const int64_t n = weight.size(0), k = weight.size(1), rows = pre.numel() / n;
  Tensor dpre, dbias;
  if (has_bias && pre.device().is_cpu()) {
    const Tensor g = grad.contiguous(), p = pre.contiguous();
    dpre = empty(p.shape(), p.dtype(), p.device());
    dbias = empty({n}, p.dtype(), p.device());
    HT_DISPATCH_FLOAT(p.dtype(), "linear_gelu_backward", p.device(), [&] {
      cpu::gelu_backward_column_sums(dpre.data<scalar_t>(), dbias.data<scalar_t>(), g.data<scalar_t>(),
                                     p.data<scalar_t>(), rows, n);
    });
  } else {
    dpre = gelu_backward(grad, pre);
    if (has_bias) dbias = sum(dpre.view({rows, n}), {0});
  }
  const Tensor d2 = dpre.view({rows, n});
  const Tensor x2 = x.contiguous().view({rows, k});
  return {matmul(d2, weight).view(x.shape()), matmul(d2, x2, true, false), dbias};
}

}  // namespace hetu::ops
