// Module: a named tree of parameters, as in PyTorch. Parameters are leaf tensors that
// require grad; their full names join the path with dots ("h.0.attn.c_attn.weight"), which
// is also how checkpoints and the PyTorch fixtures name them.
//
//   struct Mlp : Module { Linear fc{*this, "c_fc", 64, 256}; ... };
//   for (auto& [name, p] : model.named_parameters()) ...
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lib/core/tensor.h"

namespace hetu::nn {

struct NamedParameter {
  std::string name;
  Tensor tensor;
};

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Every parameter under this module, depth first in registration order.
  std::vector<NamedParameter> named_parameters(const std::string& prefix = "") const;
  int64_t num_parameters() const;
  // The parameter with this full name; throws naming it when there is none.
  Tensor parameter(const std::string& name) const;
  // Sets every gradient to undefined (the next backward writes fresh ones).
  void zero_grad() const;
  // Moves every parameter to `device` in place (handles held by layers stay valid).
  void to(Device device) const;

 protected:
  // Registers a parameter (marked requires_grad) and returns its handle.
  Tensor register_parameter(const std::string& name, Tensor tensor);
  Module& register_module(const std::string& name, Module& child);

 private:
  std::vector<std::pair<std::string, Tensor>> parameters_;
  std::vector<std::pair<std::string, Module*>> children_;
};

// A parameter as a layer computes with it: itself when `x` (the activation it meets) has its
// dtype, else a differentiable cast to x's dtype. Parameters stay f32 (the master weights);
// under bf16 compute every use is a bf16 copy whose gradient flows back to the parameter as
// f32 (the cast's backward), so the optimizer and the gradient sync see f32.
Tensor compute_copy(const Tensor& param, const Tensor& x);

class TensorParallel;

// How parameters are initialised: from the counter-based RNG keyed by (seed, full parameter
// name), so every run, and every shard of a parameter, gets the same values. With `tp`, a
// parameter is created as this rank's shard of its logical `shape` (tensor_parallel.h), and
// its layout is recorded there. Without `fill` parameters are only allocated: for a model
// whose every parameter is overwritten before use (the next strategy of a switch), where
// drawing 124M normals would cost seconds for nothing.
struct ParamInit {
  uint64_t seed = 0;
  std::string prefix;  // full name of the module being built, with a trailing '.'
  std::shared_ptr<TensorParallel> tp;  // null: every parameter whole
  bool fill = true;    // false: values left unset (the layout is still recorded)

  ParamInit child(const std::string& name) const { return {seed, prefix + name + ".", tp, fill}; }
  std::string name(const std::string& param) const { return prefix + param; }
  Tensor normal(const std::string& param, const Shape& shape, double std) const;
  Tensor constant(const std::string& param, const Shape& shape, double value) const;
};

}  // namespace hetu::nn
