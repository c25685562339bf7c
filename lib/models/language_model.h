// The interface every built-in model family implements, and the factory. A LanguageModel
// maps token ids (B, T) to logits (B, T, vocab). The same model code runs on one device and
// in every parallel layout: a pipeline stage builds only its part (ModelPart: its layers,
// and the embedding on the first stage, the head on the last), and tensor parallelism is
// the layers' business (lib/nn/tensor_parallel.h) with each family's sharding rule
// (<arch>_sharding.cpp, model_sharding.h).
//
//   auto model = build_model(find_flavor(Arch::gpt2, "tiny").value(), /*seed=*/1234);
//   Tensor loss = model->loss(x, y);     // mean cross-entropy over (B, T)
//   autograd::backward(loss);
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "lib/autograd/recompute.h"
#include "lib/models/model_config.h"
#include "lib/nn/module.h"

namespace hetu {

// Keys and values of every layer for the positions seen so far, so that generating a token
// costs one position of compute. k[i], v[i] are (B, Hkv, length, D).
struct KVCache {
  std::vector<Tensor> k, v;
  int64_t length = 0;
};

// The part of the model one pipeline stage holds.
struct ModelPart {
  int64_t first_layer = 0;
  int64_t last_layer = -1;  // inclusive; -1: the last layer of the model
  bool embed = true;        // token (and position) embedding: the first stage
  bool head = true;         // final norm, LM head and loss: the last stage
  autograd::Recompute recompute = autograd::Recompute::none;  // what stage_forward's blocks keep

  static ModelPart whole() { return {}; }
  bool is_whole(const ModelConfig& config) const;
  int64_t last(const ModelConfig& config) const { return last_layer < 0 ? config.layers - 1 : last_layer; }
  bool has_layer(const ModelConfig& config, int64_t layer) const {
    return layer >= first_layer && layer <= last(config);
  }
};

// What build_model needs besides the config.
struct ModelBuild {
  uint64_t seed = 0;
  ModelPart part;
  std::shared_ptr<nn::TensorParallel> tp;  // null: no tensor parallelism
  // Activations' dtype: embed() casts to it, and every layer computes in its input's dtype
  // with compute copies of its f32 parameters (nn::compute_copy). bf16 on GPUs; f64 is the
  // CPU numerics reference.
  DType compute_dtype = DType::f32;
  bool fill_parameters = true;  // false: allocated only (nn::ParamInit::fill)
};

class LanguageModel : public nn::Module {
 public:
  LanguageModel(ModelConfig config, ModelBuild build) : config_(std::move(config)), build_(std::move(build)) {}
  const ModelConfig& config() const { return config_; }
  const ModelPart& part() const { return build_.part; }
  const nn::TensorParallel* tensor_parallel() const { return build_.tp.get(); }
  DType compute_dtype() const { return build_.compute_dtype; }

  // The pieces a pipeline stage composes. embed: ids (B, T) -> hidden (B, T, C), positions
  // from position_offset. block: one transformer layer (a global layer index this part
  // holds); with a cache it attends to the cached positions too and appends to them.
  // cu_seqlens (packed documents, lib/runtime/training_io.h): segment offsets into the B·T
  // tokens; attention stays within a segment and positions restart at each (empty: one
  // causal sequence per row).
  // head: final norm and LM head -> logits (B, T, V_local): this rank's columns of the
  // padded vocabulary, starting at vocab_offset(); it is head_input(x) head_weightᵀ, where
  // head_input is the final norm and head_weight the (V_local, C) LM head weight (the tied
  // embedding's rows, or lm_head's) in like's compute dtype.
  virtual Tensor embed(const Tensor& ids, int64_t position_offset, std::span<const int64_t> cu_seqlens = {}) const = 0;
  virtual Tensor block(int64_t layer, const Tensor& x, KVCache* cache,
                       std::span<const int64_t> cu_seqlens = {}) const = 0;
  virtual Tensor head_input(const Tensor& x) const = 0;
  virtual Tensor head_weight(const Tensor& like) const = 0;
  virtual int64_t vocab_offset() const = 0;
  Tensor head(const Tensor& x) const;

  // This part's layers over `input`: ids when the part holds the embedding, else hidden; its
  // blocks keep for backward what part().recompute says (autograd/recompute.h).
  Tensor stage_forward(const Tensor& input, std::span<const int64_t> cu_seqlens = {}) const;
  // Σ cross-entropy of head(hidden) against targets (B, T) / normalizer (0: the number of
  // targets); vocab parallel under tensor parallelism. The loss is the same on every rank of
  // the group: seed its backward on one of them (parallel_cross_entropy.h). The LM head is
  // fused into the loss (nn::parallel_linear_cross_entropy: no (B·T, V) logits);
  // HETU_FUSED_LM_HEAD=0 selects the unfused reference (logits, then the loss).
  Tensor head_loss(const Tensor& hidden, const Tensor& targets, double normalizer = 0) const;

  // The whole model on one device: ids (B, T) i32/i64 -> logits (B, T, vocab). With a cache,
  // positions continue after cache->length and the cache grows by T (use under NoGradGuard).
  Tensor forward(const Tensor& ids, KVCache* cache = nullptr) const;
  // head_loss(stage_forward(ids)) for a model holding every part.
  Tensor loss(const Tensor& ids, const Tensor& targets, double normalizer = 0,
              std::span<const int64_t> cu_seqlens = {}) const;

  // Training FLOPs per token of the whole model: 6 · (non-embedding-lookup parameters) +
  // 12 · layers · hidden · T for attention (forward + backward), the PaLM/nanoGPT MFU estimate.
  double flops_per_token(int64_t seq_len) const;

 protected:
  ModelConfig config_;
  ModelBuild build_;
};

// LanguageModel::flops_per_token of a model of `config` (no model needed: ranks that hold no
// part of it, idle under a strategy, report the same MFU figure).
double training_flops_per_token(const ModelConfig& config, int64_t seq_len);

// Appends this step's k, v (B, Hkv, T, D) to layer `layer` of the cache and replaces them by
// the whole cached sequence, ready for attention.
void append_to_cache(KVCache& cache, size_t layer, Tensor& k, Tensor& v);

// The init std of residual output projections (attention out, MLP down): 0.02/√(2·layers).
double residual_init_std(const ModelConfig& config);

// Builds the model of config.arch (or the part `build` names) with parameters from the
// counter-based RNG keyed by (seed, parameter name): N(0, 0.02), residual output
// projections N(0, 0.02/√(2·layers)), norm weights 1, biases 0. Every shard and every part
// gets the values the same elements have in the whole model.
std::unique_ptr<LanguageModel> build_model(const ModelConfig& config, ModelBuild build);
std::unique_ptr<LanguageModel> build_model(const ModelConfig& config, uint64_t seed);

}  // namespace hetu
