// GPT-2 (Radford et al. 2019): learned positions, pre-LayerNorm blocks, fused q|k|v
// projection, GELU (tanh) MLP, LM head tied to the token embedding. Parameter names are
// HF's: wte.weight, wpe.weight, h.{i}.ln_1, h.{i}.attn.c_attn, h.{i}.attn.c_proj, h.{i}.ln_2,
// h.{i}.mlp.c_fc, h.{i}.mlp.c_proj, ln_f; 2-D weights are (out, in). A pipeline part builds
// wte when it embeds or holds the (tied) head, wpe when it embeds, ln_f with the head.
#pragma once

#include <memory>
#include <vector>

#include "lib/models/language_model.h"
#include "lib/nn/embedding.h"
#include "lib/nn/linear.h"
#include "lib/nn/norm.h"

namespace hetu {

class Gpt2Block : public nn::Module {
 public:
  Gpt2Block(const nn::ParamInit& init, const ModelConfig& config);
  // x (B, T, C); with a cache, attends to the cached positions too and appends to them.
  // cu_seqlens: packed documents (LanguageModel::block).
  Tensor forward(const Tensor& x, KVCache* cache, size_t layer, std::span<const int64_t> cu_seqlens) const;

 private:
  struct Attention : nn::Module {
    Attention(const nn::ParamInit& init, const ModelConfig& config);
    nn::Linear c_attn, c_proj;
  };
  struct Mlp : nn::Module {
    Mlp(const nn::ParamInit& init, const ModelConfig& config);
    nn::Linear c_fc, c_proj;
  };
  const ModelConfig& config_;
  nn::LayerNorm ln_1;
  Attention attn;
  nn::LayerNorm ln_2;
  Mlp mlp;
};

class Gpt2Model final : public LanguageModel {
 public:
  Gpt2Model(const ModelConfig& config, ModelBuild build);
  Tensor embed(const Tensor& ids, int64_t position_offset, std::span<const int64_t> cu_seqlens = {}) const override;
  Tensor block(int64_t layer, const Tensor& x, KVCache* cache, std::span<const int64_t> cu_seqlens = {}) const override;
  Tensor head_input(const Tensor& x) const override;
  Tensor head_weight(const Tensor& like) const override;
  int64_t vocab_offset() const override { return wte ? wte->row_offset() : 0; }

 private:
  std::unique_ptr<nn::Embedding> wte, wpe;
  std::vector<std::unique_ptr<Gpt2Block>> h;  // indexed by layer; null outside this part
  std::unique_ptr<nn::LayerNorm> ln_f;
};

}  // namespace hetu
