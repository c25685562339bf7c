// AdamW and global-norm gradient clipping.
#include "lib/optim/adamw.h"

#include <cmath>

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

void AdamW::step(double lr) {
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
    ops::adamw_update(slot.param.tensor, grad, slot.m, slot.v, s);
  }
}

std::vector<nn::NamedParameter> AdamW::state() const {
  std::vector<nn::NamedParameter> out;
  for (const Slot& slot : slots_) {
    out.push_back({"optim.m/" + slot.param.name, slot.m});
    out.push_back({"optim.v/" + slot.param.name, slot.v});
  }
  return out;
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

double clip_grad_norm(const std::vector<nn::NamedParameter>& params, double max_norm) {
  const double norm = grad_norm(params);
  if (max_norm > 0 && norm > max_norm) scale_grads(params, max_norm / (norm + 1e-6));
  return norm;
}

}  // namespace hetu::optim
