// AdamW and global-norm gradient clipping.
#include "lib/optim/adamw.h"

#include <cmath>
#include <string_view>

#include "lib/ops/ops.h"

namespace hetu::optim {

AdamW::AdamW(std::vector<nn::NamedParameter> params, AdamWConfig config) : config_(config) {
  for (nn::NamedParameter& p : params) {
    Tensor m = zeros(p.tensor.shape(), p.tensor.dtype(), p.tensor.device());
    Tensor v = zeros(p.tensor.shape(), p.tensor.dtype(), p.tensor.device());
    const bool decay = p.tensor.dim() >= 2;
    slots_.push_back({std::move(p), std::move(m), std::move(v), decay});
  }
}

AdamW::AdamW(std::vector<nn::NamedParameter> params, AdamWConfig config, const std::vector<nn::NamedParameter>& state)
    : config_(config) {
  HT_CHECK(state.size() == 2 * params.size(), "adamw: {} moments for {} parameters", state.size(), params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    nn::NamedParameter& p = params[i];
    const std::vector<std::string> names = state_names(p.name);
    Tensor moments[2];
    for (size_t k = 0; k < 2; ++k) {
      const nn::NamedParameter& s = state[2 * i + k];
      HT_CHECK(s.name == names[k], "adamw: moment {} of parameter {} is {}, expected {}", k, p.name, s.name, names[k]);
      HT_CHECK(s.tensor.shape() == p.tensor.shape() && s.tensor.dtype() == p.tensor.dtype() &&
                   s.tensor.device() == p.tensor.device(),
               "adamw: {} is {} {} on {}, its parameter {} {} on {}", s.name, shape_str(s.tensor.shape()),
               to_string(s.tensor.dtype()), s.tensor.device().str(), shape_str(p.tensor.shape()),
               to_string(p.tensor.dtype()), p.tensor.device().str());
      moments[k] = s.tensor;
    }
    const bool decay = p.tensor.dim() >= 2;
    slots_.push_back({std::move(p), std::move(moments[0]), std::move(moments[1]), decay});
  }
}

void AdamW::step(double lr, double grad_scale) {
  ++step_;
  for (Slot& slot : slots_) {
    const Tensor grad = slot.param.tensor.grad();
    if (!grad.defined()) continue;
    ops::AdamWStep s;
    s.lr = lr;
    s.beta1 = config_.beta1;
    s.beta2 = config_.beta2;
    s.eps = config_.eps;
    s.weight_decay = slot.decay ? config_.weight_decay : 0.0;
    s.step = step_;
    s.grad_scale = grad_scale;
    ops::adamw_update(slot.param.tensor, grad, slot.m, slot.v, s);
  }
}

namespace {
constexpr std::string_view kStatePrefixes[] = {"optim.m/", "optim.v/"};  // m, v
}  // namespace

std::vector<nn::NamedParameter> AdamW::state() const {
  std::vector<nn::NamedParameter> out;
  for (const Slot& slot : slots_) {
    const std::vector<std::string> names = state_names(slot.param.name);
    out.push_back({names[0], slot.m});
    out.push_back({names[1], slot.v});
  }
  return out;
}

std::vector<std::string> state_names(const std::string& param) {
  std::vector<std::string> out;
  for (std::string_view prefix : kStatePrefixes) out.push_back(std::string(prefix) + param);
  return out;
}

bool is_state_name(const std::string& name) { return param_of_state(name).size() != name.size(); }

std::string param_of_state(const std::string& name) {
  for (std::string_view prefix : kStatePrefixes) {
    if (name.rfind(prefix, 0) == 0) return name.substr(prefix.size());
  }
  return name;
}

double grad_norm(const std::vector<nn::NamedParameter>& params) {
  std::vector<Tensor> grads;
  for (const nn::NamedParameter& p : params) {
    if (p.tensor.grad().defined()) grads.push_back(p.tensor.grad());
  }
  return ops::global_norm(grads);
}

void scale_grads(const std::vector<nn::NamedParameter>& params, double factor) {
  for (const nn::NamedParameter& p : params) {
    if (p.tensor.grad().defined()) p.tensor.set_grad(ops::mul_scalar(p.tensor.grad(), factor));
  }
}

double clip_factor(double norm, double max_norm) { return max_norm > 0 && norm > max_norm ? max_norm / (norm + 1e-6) : 1.0; }

double clip_grad_norm(const std::vector<nn::NamedParameter>& params, double max_norm) {
  const double norm = grad_norm(params);
  const double factor = clip_factor(norm, max_norm);
  if (factor != 1.0) scale_grads(params, factor);
  return norm;
}

}  // namespace hetu::optim
