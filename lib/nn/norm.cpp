// LayerNorm and RMSNorm.
#include "lib/nn/norm.h"

#include "lib/autograd/functions.h"

namespace hetu::nn {

LayerNorm::LayerNorm(const ParamInit& init, int64_t dim, double eps_) : eps(eps_) {
  weight = register_parameter("weight", init.constant("weight", {dim}, 1.0));
  bias = register_parameter("bias", init.constant("bias", {dim}, 0.0));
}

Tensor LayerNorm::forward(const Tensor& x) const {
  return autograd::layer_norm(x, compute_copy(weight, x), compute_copy(bias, x), eps);
}

RMSNorm::RMSNorm(const ParamInit& init, int64_t dim, double eps_) : eps(eps_) {
  weight = register_parameter("weight", init.constant("weight", {dim}, 1.0));
}

Tensor RMSNorm::forward(const Tensor& x) const { return autograd::rms_norm(x, compute_copy(weight, x), eps); }

}  // namespace hetu::nn
