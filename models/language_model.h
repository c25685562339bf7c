// The interface every built-in model family implements, and the factory. A LanguageModel
// maps token ids (B, T) to logits (B, T, vocab) on this process's device; it is written for
// one device (sharding plans live beside it in <arch>_sharding.cpp, later).
//
//   auto model = build_model(find_flavor(Arch::gpt2, "tiny").value(), /*seed=*/1234);
//   Tensor loss = model->loss(x, y);     // mean cross-entropy over (B, T)
//   autograd::backward(loss);
#pragma once

#include <memory>

#include "lib/nn/module.h"
#include "models/model_config.h"

namespace hetu {

class LanguageModel : public nn::Module {
 public:
  explicit LanguageModel(ModelConfig config) : config_(std::move(config)) {}
  const ModelConfig& config() const { return config_; }

  // ids (B, T) i32/i64 -> logits (B, T, vocab). Positions start at position_offset.
  virtual Tensor forward(const Tensor& ids, int64_t position_offset = 0) const = 0;

  // Σ cross-entropy over the (B, T) targets / normalizer (0: the number of targets), so that
  // micro-batches of one global batch can each divide by the global token count.
  Tensor loss(const Tensor& ids, const Tensor& targets, double normalizer = 0) const;

  // Training FLOPs per token: 6 · (non-embedding-lookup parameters) + 12 · layers · hidden · T
  // for attention (forward + backward), as in the PaLM/nanoGPT MFU estimate.
  double flops_per_token(int64_t seq_len) const;

 protected:
  ModelConfig config_;
};

// Builds the model of config.arch with parameters from the counter-based RNG keyed by
// (seed, parameter name): N(0, 0.02), residual output projections N(0, 0.02/√(2·layers)),
// norm weights 1, biases 0.
std::unique_ptr<LanguageModel> build_model(const ModelConfig& config, uint64_t seed);

}  // namespace hetu
