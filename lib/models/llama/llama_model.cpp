// LLaMA forward pass. Shapes: B batch, T time, C hidden, H heads, Hkv kv heads (this rank's
// under tensor parallelism, read from the q/k shards), D = head_dim.
#include "lib/models/llama/llama_model.h"

#include "lib/models/llama/llama_rope.h"

#include <cmath>

#include "lib/autograd/functions.h"
#include "lib/nn/tensor_parallel.h"
#include "lib/ops/ops.h"

namespace hetu {
namespace ag = autograd;
LlamaBlock::Attention::Attention(const nn::ParamInit& init, const ModelConfig& c)
    : q_proj(init.child("q_proj"), c.hidden, c.heads * c.head_dim(), false),
      k_proj(init.child("k_proj"), c.hidden, c.kv_heads * c.head_dim(), false),
      v_proj(init.child("v_proj"), c.hidden, c.kv_heads * c.head_dim(), false),
      o_proj(init.child("o_proj"), c.heads * c.head_dim(), c.hidden, false, residual_init_std(c)) {
  register_module("q_proj", q_proj);
  register_module("k_proj", k_proj);
  register_module("v_proj", v_proj);
  register_module("o_proj", o_proj);
}

LlamaBlock::Mlp::Mlp(const nn::ParamInit& init, const ModelConfig& c)
    : gate_proj(init.child("gate_proj"), c.hidden, c.ffn_hidden, false),
      up_proj(init.child("up_proj"), c.hidden, c.ffn_hidden, false),
      down_proj(init.child("down_proj"), c.ffn_hidden, c.hidden, false, residual_init_std(c)) {
  register_module("gate_proj", gate_proj);
  register_module("up_proj", up_proj);
  register_module("down_proj", down_proj);
}

LlamaBlock::LlamaBlock(const nn::ParamInit& init, const ModelConfig& c, const std::vector<double>& rope_frequencies)
    : config_(c),
      rope_frequencies_(rope_frequencies),
      input_layernorm(init.child("input_layernorm"), c.hidden, c.norm_eps),
      self_attn(init.child("self_attn"), c),
      post_attention_layernorm(init.child("post_attention_layernorm"), c.hidden, c.norm_eps),
      mlp(init.child("mlp"), c) {
  register_module("input_layernorm", input_layernorm);
  register_module("self_attn", self_attn);
  register_module("post_attention_layernorm", post_attention_layernorm);
  register_module("mlp", mlp);
}

Tensor LlamaBlock::forward(const Tensor& x, KVCache* cache, size_t layer, std::span<const int64_t> cu_seqlens) const {
  const ModelConfig& c = config_;
  const int64_t position_offset = cache != nullptr ? cache->length : 0;
  const int64_t B = x.size(0), T = x.size(1), D = c.head_dim();
  const int64_t H = self_attn.q_proj.weight.size(0) / D, Hkv = self_attn.k_proj.weight.size(0) / D;
  const Tensor n = input_layernorm.forward(x);
  // q (B, T, H, D) and k (B, T, Hkv, D) rotate in place of time; all go to (B, heads, T, D).
  HT_CHECK(cache == nullptr || cu_seqlens.empty(), "llama: packed documents cannot decode with a KV cache");
  const std::vector<int64_t> positions = cu_seqlens.empty() ? std::vector<int64_t>{} : ops::segment_positions(cu_seqlens);
  auto rope = [&](const Tensor& t) {
    return positions.empty() ? ag::rotary(t, position_offset, rope_frequencies_)
                             : ag::rotary(t, std::span<const int64_t>(positions), rope_frequencies_);
  };
  const Tensor q = rope(ag::reshape(self_attn.q_proj.forward(n), {B, T, H, D}));
  const Tensor k = rope(ag::reshape(self_attn.k_proj.forward(n), {B, T, Hkv, D}));
  const Tensor v = ag::reshape(self_attn.v_proj.forward(n), {B, T, Hkv, D});
  Tensor kh = ag::transpose(k, 1, 2), vh = ag::transpose(v, 1, 2);
  if (cache != nullptr) append_to_cache(*cache, layer, kh, vh);
  const Tensor y = ag::attention(ag::transpose(q, 1, 2), kh, vh, 1.0 / std::sqrt(static_cast<double>(D)), cu_seqlens);
  const Tensor h = self_attn.o_proj.forward(ag::reshape(ag::transpose(y, 1, 2), {B, T, H * D}), /*residual=*/x);
  // SwiGLU: down(silu(gate(x)) * up(x)).
  const Tensor m = post_attention_layernorm.forward(h);
  const Tensor gated = ag::mul(ag::silu(mlp.gate_proj.forward(m)), mlp.up_proj.forward(m));
  return mlp.down_proj.forward(gated, /*residual=*/h);
}

LlamaModel::Body::Body(const nn::ParamInit& init, const ModelConfig& c, const ModelPart& part,
                       const std::vector<double>& rope_frequencies) {
  if (part.embed || (part.head && c.tie_embeddings)) {
    embed_tokens = std::make_unique<nn::Embedding>(init.child("embed_tokens"), c.padded_vocab(), c.hidden);
    register_module("embed_tokens", *embed_tokens);
  }
  layers.resize(static_cast<size_t>(c.layers));
  for (int64_t i = part.first_layer; i <= part.last(c); ++i) {
    const std::string name = "layers." + std::to_string(i);
    layers[static_cast<size_t>(i)] = std::make_unique<LlamaBlock>(init.child(name), c, rope_frequencies);
    register_module(name, *layers[static_cast<size_t>(i)]);
  }
  if (part.head) {
    norm = std::make_unique<nn::RMSNorm>(init.child("norm"), c.hidden, c.norm_eps);
    register_module("norm", *norm);
  }
}

LlamaModel::LlamaModel(const ModelConfig& c, ModelBuild build)
    : LanguageModel(c, std::move(build)),
      rope_frequencies_(llama_rope_frequencies(config_)),
      model(nn::ParamInit{build_.seed, "model.", build_.tp, build_.fill_parameters}, config_, part(), rope_frequencies_) {
  register_module("model", model);
  if (part().head && !c.tie_embeddings) {
    lm_head = std::make_unique<nn::Linear>(nn::ParamInit{build_.seed, "lm_head.", build_.tp, build_.fill_parameters}, c.hidden,
                                           c.padded_vocab(), false);
    register_module("lm_head", *lm_head);
  }
}

Tensor LlamaModel::embed(const Tensor& ids, int64_t /*position_offset: rotary, in the blocks*/,
                         std::span<const int64_t> /*cu_seqlens: rotary, in the blocks*/) const {
  HT_CHECK(part().embed, "llama: this part has no embedding");
  return model.embed_tokens->forward(ids, compute_dtype());
}

Tensor LlamaModel::block(int64_t layer, const Tensor& x, KVCache* cache, std::span<const int64_t> cu_seqlens) const {
  HT_CHECK(layer >= 0 && layer < config_.layers && model.layers[static_cast<size_t>(layer)],
           "llama: this part has no layer {}", layer);
  return model.layers[static_cast<size_t>(layer)]->forward(x, cache, static_cast<size_t>(layer), cu_seqlens);
}

Tensor LlamaModel::head_input(const Tensor& x) const {
  HT_CHECK(model.norm, "llama: this part has no head");
  return model.norm->forward(x);
}

Tensor LlamaModel::head_weight(const Tensor& like) const {
  return nn::compute_copy(lm_head ? lm_head->weight : model.embed_tokens->weight, like);  // lm_head has no bias
}

int64_t LlamaModel::vocab_offset() const {
  if (!lm_head) return model.embed_tokens->row_offset();
  const nn::TensorParallel* tp = tensor_parallel();
  if (tp == nullptr || tp->size() == 1) return 0;
  return tp->local_box(tp->placement("lm_head.weight")).offset[0];
}

}  // namespace hetu
