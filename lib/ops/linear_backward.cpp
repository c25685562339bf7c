// linear_backward: the gradients of the linear layer (out = x Wᵀ + b + residual) for its
// backward rule. dx is one GEMM; on the CPU the weight GEMM and the bias column sums share one
// read of the incoming gradient (cpu::linear_weight_bias_grads), where the reference
// (matmul, matmul, sum over the rows) reads it a third time for the sums. CUDA composes the
// reference ops.
#include "lib/ops/cpu/linear_backward.h"
#include "lib/ops/op_checks.h"
#include "lib/ops/ops.h"
#include "lib/ops/f16_storage.h"

namespace hetu::ops {

LinearGrads linear_backward(const Tensor& grad, const Tensor& x, const Tensor& weight, bool has_bias) {
  if (stores_f16({&grad, &x, &weight})) {
    const LinearGrads g = linear_backward(widened(grad), widened(x), widened(weight), has_bias);
    return {narrowed(g.dx), narrowed(g.dweight), narrowed(g.dbias)};
  }
  check_inputs("linear_backward", {&grad, &x, &weight}, Backends::cpu_and_cuda);
  check_float_dtype("linear_backward", {&grad, &x, &weight});
  HT_CHECK(grad.dim() == 2 && x.dim() == 2 && weight.dim() == 2 && grad.size(0) == x.size(0) &&
               grad.size(1) == weight.size(0) && x.size(1) == weight.size(1),
           "linear_backward: grad {}, x {} and weight {} do not fit (want (M, N), (M, K), (N, K))",
           shape_str(grad.shape()), shape_str(x.shape()), shape_str(weight.shape()));
  Tensor dx = matmul(grad, weight);
  if (!has_bias || !grad.device().is_cpu()) {
    return {std::move(dx), matmul(grad, x, true, false), has_bias ? sum(grad, {0}) : Tensor()};
  }
  const Tensor g = grad.contiguous(), xc = x.contiguous();
  const int64_t rows = g.size(0), n = g.size(1), k = xc.size(1);
  Tensor dweight = empty({n, k}, g.dtype(), g.device()), dbias = empty({n}, g.dtype(), g.device());
  HT_DISPATCH_FLOAT(g.dtype(), "linear_backward", g.device(), [&] {
    cpu::linear_weight_bias_grads(dweight.data<scalar_t>(), dbias.data<scalar_t>(), g.data<scalar_t>(),
                                  xc.data<scalar_t>(), rows, n, k);
  });
  return {std::move(dx), std::move(dweight), std::move(dbias)};
}

}  // namespace hetu::ops
