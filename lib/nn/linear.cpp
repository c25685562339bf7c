// Linear layer.
#include "lib/nn/linear.h"

#include "lib/autograd/functions.h"

namespace hetu::nn {

Linear::Linear(const ParamInit& init, int64_t in_features, int64_t out_features, bool has_bias, double std) {
  weight = register_parameter("weight", init.normal("weight", {out_features, in_features}, std));
  if (has_bias) bias = register_parameter("bias", init.constant({out_features}, 0.0));
}

Tensor Linear::forward(const Tensor& x) const {
  Tensor y = autograd::matmul(x, weight, /*trans_a=*/false, /*trans_b=*/true);
  return bias.defined() ? autograd::add(y, bias) : y;
}

}  // namespace hetu::nn
