// Linear layer; see linear.h for its tensor-parallel forms.
#include "lib/nn/linear.h"

#include "lib/autograd/functions.h"
#include "lib/nn/tensor_parallel.h"

namespace hetu::nn {

Linear::Linear(const ParamInit& init, int64_t in_features, int64_t out_features, bool has_bias, double std) {
  weight = register_parameter("weight", init.normal("weight", {out_features, in_features}, std));
  if (has_bias) bias = register_parameter("bias", init.constant("bias", {out_features}, 0.0));
  if (init.tp && init.tp->size() > 1) {
    // Input features are the last dim of the weight (and of any view of it, which only
    // splits the output dim): split there means row parallel.
    const TensorPlacement& p = init.tp->placement(init.name("weight"));
    if (init.tp->local_state(p).split_count(static_cast<int64_t>(p.view.size()) - 1) > 1) tp_ = init.tp;
  }
}

Tensor Linear::forward(const Tensor& x, const Tensor& residual) const {
  const Tensor w = compute_copy(weight, x);
  // Column parallel or whole: the bias enters the GEMM (autograd::linear). The residual is
  // added after it, not in the GEMM too (ops::linear can): the row-parallel form below can only
  // add it after its sum, and a tp layout must round as the whole layer does to train the
  // one-device model's numbers (tests/e2e/parallel_equivalence.sh, gpt2-pp2-tp2-tp1).
  if (!tp_) {
    const Tensor y = autograd::linear(x, w, bias.defined() ? compute_copy(bias, x) : Tensor(), Tensor());
    return residual.defined() ? autograd::add(residual, y) : y;
  }
  // Row parallel: each rank summed its input columns; bias and residual are added once, after the sum.
  Tensor y = tp_->reduce_partial(autograd::matmul(x, w, /*trans_a=*/false, /*trans_b=*/true));
  if (bias.defined()) y = autograd::add(y, compute_copy(bias, y));
  return residual.defined() ? autograd::add(residual, y) : y;
}

}  // namespace hetu::nn
