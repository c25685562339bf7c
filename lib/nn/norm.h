// Normalisation layers over the last dim: LayerNorm (weight 1, bias 0) and RMSNorm
// (x · rsqrt(mean(x²) + eps) · weight, weight 1).
#pragma once

#include "lib/nn/module.h"

namespace hetu::nn {

class LayerNorm : public Module {
 public:
  LayerNorm(const ParamInit& init, int64_t dim, double eps);
  Tensor forward(const Tensor& x) const;

  Tensor weight;
  Tensor bias;
  double eps;
};

class RMSNorm : public Module {
 public:
  RMSNorm(const ParamInit& init, int64_t dim, double eps);
  Tensor forward(const Tensor& x) const;

  Tensor weight;
  double eps;
};

}  // namespace hetu::nn
