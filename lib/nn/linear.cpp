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
  // Column parallel or whole: bias and residual enter ops::linear (no tensor of their own),
  // which rounds (x Wᵀ + b) + residual, as the row-parallel form below does.
  if (!tp_) return autograd::linear(x, w, bias.defined() ? compute_copy(bias, x) : Tensor(), residual);
  // Row parallel: each rank summed its input columns; bias and residual are added once, after the sum.
  Tensor y = tp_->reduce_partial(autograd::matmul(x, w, /*trans_a=*/false, /*trans_b=*/true));
  if (bias.defined()) y = autograd::add(y, compute_copy(bias, y));
  return residual.defined() ? autograd::add(residual, y) : y;
}

Tensor Linear::forward_gelu(const Tensor& x) const {
  if (tp_) return autograd::gelu(forward(x));  // row parallel: GELU after the sum and the bias
  return autograd::linear_gelu(x, compute_copy(weight, x), bias.defined() ? compute_copy(bias, x) : Tensor());
}

}  // namespace hetu::nn
