// Linear layer: y = x Wᵀ + b with W stored (out_features, in_features), as torch.nn.Linear.
// x is (..., in); y is (..., out). Weights N(0, std) from the RNG, bias zeros.
// Under tensor parallelism (tensor_parallel.h) the weight's layout decides the behaviour:
// output features split (column parallel: y holds this rank's output columns) or input
// features split (row parallel: x holds this rank's input columns, y is all-reduced).
#pragma once

#include <memory>

#include "lib/nn/module.h"

namespace hetu::nn {

class Linear : public Module {
 public:
  Linear(const ParamInit& init, int64_t in_features, int64_t out_features, bool bias, double std = 0.02);
  // residual (..., out) or undefined: (x Wᵀ + b) + residual, bias and residual added inside ops::linear.
  Tensor forward(const Tensor& x, const Tensor& residual = Tensor()) const;
  // gelu(forward(x)); whole or column parallel, one autograd node (autograd::linear_gelu) whose
  // backward forms the GELU's gradient and the bias gradient in one pass.
  Tensor forward_gelu(const Tensor& x) const;

  Tensor weight;
  Tensor bias;  // undefined without bias

 private:
  std::shared_ptr<TensorParallel> tp_;  // set for a row-parallel layer (its output needs the sum)
};

}  // namespace hetu::nn
