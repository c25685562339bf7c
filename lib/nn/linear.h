// Linear layer: y = x Wᵀ + b with W stored (out_features, in_features), as torch.nn.Linear.
// x is (..., in); y is (..., out). Weights N(0, std) from the RNG, bias zeros.
#pragma once

#include "lib/nn/module.h"

namespace hetu::nn {

class Linear : public Module {
 public:
  Linear(const ParamInit& init, int64_t in_features, int64_t out_features, bool bias, double std = 0.02);
  Tensor forward(const Tensor& x) const;

  Tensor weight;
  Tensor bias;  // undefined without bias
};

}  // namespace hetu::nn
