// AdamW with decoupled weight decay (as torch.optim.AdamW) over named parameters. Weight
// decay applies to tensors with ndim >= 2 (matrices and embeddings), never to biases or
// norm weights. State (m, v per parameter, the step count) is exposed for checkpoints.
//
//   AdamW opt(model.named_parameters(), {.beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1});
//   opt.step(lr);   // after backward; parameters without a gradient are skipped
//   AdamW moved(params, config, moments);  // adopts moments (a strategy switch's, in state() order)
#pragma once

#include <string>
#include <vector>

#include "lib/nn/module.h"

namespace hetu::optim {

struct AdamWConfig {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
};

class AdamW {
 public:
  AdamW(std::vector<nn::NamedParameter> params, AdamWConfig config);
  // Takes `state` (as state() lists it for `params`: names, order, each moment shaped like its
  // parameter) as the moments instead of zeros, without copying them.
  AdamW(std::vector<nn::NamedParameter> params, AdamWConfig config, const std::vector<nn::NamedParameter>& state);

  // grad_scale: the update uses grad_scale · grad (the clipping factor, folded into the
  // update instead of a pass over every gradient).
  void step(double lr, double grad_scale = 1.0);
  int64_t steps_taken() const { return step_; }

  // Checkpoint state: "optim.m/<param>", "optim.v/<param>" tensors and the step count.
  std::vector<nn::NamedParameter> state() const;
  void set_steps_taken(int64_t step) { step_ = step; }

 private:
  struct Slot {
    nn::NamedParameter param;
    Tensor m, v;
    bool decay;
  };
  std::vector<Slot> slots_;
  AdamWConfig config_;
  int64_t step_ = 0;
};

// Checkpoint names of a parameter's AdamW state ("optim.m/<param>", "optim.v/<param>"),
// whether a name is one, and the parameter a state name belongs to (other names unchanged).
std::vector<std::string> state_names(const std::string& param);
bool is_state_name(const std::string& name);
std::string param_of_state(const std::string& name);

// Global L2 norm of the gradients of `params` (undefined gradients count as zero).
double grad_norm(const std::vector<nn::NamedParameter>& params);
// Multiplies every defined gradient by `factor` (in place).
void scale_grads(const std::vector<nn::NamedParameter>& params, double factor);
// The factor that clips a gradient of global norm `norm` to `max_norm`: max_norm / (norm + 1e-6)
// when norm > max_norm > 0, else 1 (the Trainer passes it to AdamW::step as grad_scale).
double clip_factor(double norm, double max_norm);
// Scales every gradient by clip_factor(norm, max_norm); returns the pre-clip norm.
double clip_grad_norm(const std::vector<nn::NamedParameter>& params, double max_norm);

}  // namespace hetu::optim
