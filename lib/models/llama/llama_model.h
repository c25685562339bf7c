// LLaMA (Touvron et al. 2023): RMSNorm, rotary embeddings (rotate-half; Llama 3's
// rope_scaling in the frequencies, llama_rope.h),
// grouped-query attention, SwiGLU MLP, untied LM head unless tie_embeddings. Parameter names
// are HF's: model.embed_tokens, model.layers.{i}.input_layernorm, .self_attn.{q,k,v,o}_proj,
// .post_attention_layernorm, .mlp.{gate,up,down}_proj, model.norm, lm_head; no biases.
// A pipeline part builds embed_tokens when it embeds (or holds a tied head), model.norm and
// lm_head with the head.
#pragma once

#include <memory>
#include <vector>

#include "lib/models/language_model.h"
#include "lib/nn/embedding.h"
#include "lib/nn/linear.h"
#include "lib/nn/norm.h"

namespace hetu {

class LlamaBlock : public nn::Module {
 public:
  // rope_frequencies: the model's D/2 rotary frequencies (llama_rope.h), outliving the block.
  LlamaBlock(const nn::ParamInit& init, const ModelConfig& config, const std::vector<double>& rope_frequencies);
  // x (B, T, C); with a cache, attends to the cached positions too and appends to them.
  // cu_seqlens: packed documents (LanguageModel::block): rotary positions restart at each.
  Tensor forward(const Tensor& x, KVCache* cache, size_t layer, std::span<const int64_t> cu_seqlens) const;

 private:
  struct Attention : nn::Module {
    Attention(const nn::ParamInit& init, const ModelConfig& config);
    nn::Linear q_proj, k_proj, v_proj, o_proj;
  };
  struct Mlp : nn::Module {
    Mlp(const nn::ParamInit& init, const ModelConfig& config);
    nn::Linear gate_proj, up_proj, down_proj;
  };
  const ModelConfig& config_;
  const std::vector<double>& rope_frequencies_;
  nn::RMSNorm input_layernorm;
  Attention self_attn;
  nn::RMSNorm post_attention_layernorm;
  Mlp mlp;
};

class LlamaModel final : public LanguageModel {
 public:
  LlamaModel(const ModelConfig& config, ModelBuild build);
  Tensor embed(const Tensor& ids, int64_t position_offset, std::span<const int64_t> cu_seqlens = {}) const override;
  Tensor block(int64_t layer, const Tensor& x, KVCache* cache, std::span<const int64_t> cu_seqlens = {}) const override;
  Tensor head_input(const Tensor& x) const override;
  Tensor head_weight(const Tensor& like) const override;
  int64_t vocab_offset() const override;

 private:
  // The "model." prefix of HF names: embed_tokens, layers, norm.
  struct Body : nn::Module {
    Body(const nn::ParamInit& init, const ModelConfig& config, const ModelPart& part,
         const std::vector<double>& rope_frequencies);
    std::unique_ptr<nn::Embedding> embed_tokens;
    std::vector<std::unique_ptr<LlamaBlock>> layers;  // indexed by layer; null outside this part
    std::unique_ptr<nn::RMSNorm> norm;
  };
  std::vector<double> rope_frequencies_;  // computed once, before the blocks that use it
  Body model;
  std::unique_ptr<nn::Linear> lm_head;  // absent when tied to embed_tokens or without the head
};

}  // namespace hetu
