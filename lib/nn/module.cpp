// Module parameter registry.
#include "lib/nn/module.h"

#include "lib/autograd/functions.h"
#include "lib/core/tensor_random.h"
#include "lib/hspmd/tensor_placement.h"
#include "lib/nn/tensor_parallel.h"

namespace hetu::nn {

std::vector<NamedParameter> Module::named_parameters(const std::string& prefix) const {
  std::vector<NamedParameter> out;
  for (const auto& [name, tensor] : parameters_) out.push_back({prefix + name, tensor});
  for (const auto& [name, child] : children_) {
    std::vector<NamedParameter> sub = child->named_parameters(prefix + name + ".");
    out.insert(out.end(), sub.begin(), sub.end());
  }
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const NamedParameter& p : named_parameters()) n += p.tensor.numel();
  return n;
}

Tensor Module::parameter(const std::string& name) const {
  for (const NamedParameter& p : named_parameters()) {
    if (p.name == name) return p.tensor;
  }
  HT_THROW("no parameter named {}", name);
}

void Module::zero_grad() const {
  for (const NamedParameter& p : named_parameters()) p.tensor.set_grad(Tensor());
}

void Module::to(Device device) const {
  for (const NamedParameter& p : named_parameters()) p.tensor.move_to(device);
}

Tensor compute_copy(const Tensor& param, const Tensor& x) {
  return param.dtype() == x.dtype() ? param : autograd::cast(param, x.dtype());
}

Tensor Module::register_parameter(const std::string& name, Tensor tensor) {
  tensor.set_requires_grad(true);
  parameters_.emplace_back(name, tensor);
  return tensor;
}

Tensor ParamInit::normal(const std::string& param, const Shape& shape, double std) const {
  if (!tp) return fill ? random_normal(shape, seed, name(param), 0.0, std) : empty(shape);
  const TensorPlacement& p = tp->add_param(name(param), shape);
  const Box box = tp->local_box(p);
  if (!fill) return empty(local_shape(p.shape, p.view, box));
  return random_normal(box.size, seed, name(param), 0.0, std, p.view, box.offset)
      .reshape(local_shape(p.shape, p.view, box));
}

Tensor ParamInit::constant(const std::string& param, const Shape& shape, double value) const {
  if (!tp) return fill ? full(shape, value) : empty(shape);
  const TensorPlacement& p = tp->add_param(name(param), shape);
  const Shape local = local_shape(p.shape, p.view, tp->local_box(p));
  return fill ? full(local, value) : empty(local);
}

Module& Module::register_module(const std::string& name, Module& child) {
  children_.emplace_back(name, &child);
  return child;
}

}  // namespace hetu::nn
