// The interface every built-in model family implements, and the factory. A LanguageModel
// maps token ids (B, T) to logits (B, T, vocab) on this process's device; it is written for
// one device (sharding plans live beside it in <arch>_sharding.cpp, later).
//
//   auto model = build_model(find_flavor(Arch::gpt2, "tiny").value(), /*seed=*/1234);
//   Tensor loss = model->loss(x, y);     // mean cross-entropy over (B, T)
//   autograd::backward(loss);
#pragma once

#include <memory>
#include <vector>

#include "lib/nn/module.h"
#include "models/model_config.h"

namespace hetu {

// Keys and values of every layer for the positions seen so far, so that generating a token
// costs one position of compute. k[i], v[i] are (B, Hkv, length, D).
struct KVCache {
  std::vector<Tensor> k, v;
  int64_t length = 0;
};

class LanguageModel : public nn::Module {
 public:
  explicit LanguageModel(ModelConfig config) : config_(std::move(config)) {}
  const ModelConfig& config() const { return config_; }

  // ids (B, T) i32/i64 -> logits (B, T, vocab). With a cache, positions continue after
  // cache->length and the cache grows by T (use under autograd::NoGradGuard).
  virtual Tensor forward(const Tensor& ids, KVCache* cache = nullptr) const = 0;

  // Σ cross-entropy over the (B, T) targets / normalizer (0: the number of targets), so that
  // micro-batches of one global batch can each divide by the global token count.
  Tensor loss(const Tensor& ids, const Tensor& targets, double normalizer = 0) const;

  // Training FLOPs per token: 6 · (non-embedding-lookup parameters) + 12 · layers · hidden · T
  // for attention (forward + backward), as in the PaLM/nanoGPT MFU estimate.
  double flops_per_token(int64_t seq_len) const;

 protected:
  ModelConfig config_;
};

// Appends this step's k, v (B, Hkv, T, D) to layer `layer` of the cache and replaces them by
// the whole cached sequence, ready for attention.
void append_to_cache(KVCache& cache, size_t layer, Tensor& k, Tensor& v);

// The init std of residual output projections (attention out, MLP down): 0.02/√(2·layers).
double residual_init_std(const ModelConfig& config);

// Builds the model of config.arch with parameters from the counter-based RNG keyed by
// (seed, parameter name): N(0, 0.02), residual output projections N(0, 0.02/√(2·layers)),
// norm weights 1, biases 0.
std::unique_ptr<LanguageModel> build_model(const ModelConfig& config, uint64_t seed);

}  // namespace hetu
