// GPT-2 forward pass. Shapes: B batch, T time, C hidden, H heads (this rank's under tensor
// parallelism, read from the c_attn shard), D = C / heads, V vocab.
#include "lib/models/gpt2/gpt2_model.h"

#include <algorithm>
#include <cmath>

#include "lib/autograd/functions.h"
#include "lib/ops/ops.h"

namespace hetu {
namespace ag = autograd;
Gpt2Block::Attention::Attention(const nn::ParamInit& init, const ModelConfig& c)
    : c_attn(init.child("c_attn"), c.hidden, 3 * c.hidden, true),
      c_proj(init.child("c_proj"), c.hidden, c.hidden, true, residual_init_std(c)) {
  register_module("c_attn", c_attn);
  register_module("c_proj", c_proj);
}

Gpt2Block::Mlp::Mlp(const nn::ParamInit& init, const ModelConfig& c)
    : c_fc(init.child("c_fc"), c.hidden, c.ffn_hidden, true),
      c_proj(init.child("c_proj"), c.ffn_hidden, c.hidden, true, residual_init_std(c)) {
  register_module("c_fc", c_fc);
  register_module("c_proj", c_proj);
}

Gpt2Block::Gpt2Block(const nn::ParamInit& init, const ModelConfig& c)
    : config_(c),
      ln_1(init.child("ln_1"), c.hidden, c.norm_eps),
      attn(init.child("attn"), c),
      ln_2(init.child("ln_2"), c.hidden, c.norm_eps),
      mlp(init.child("mlp"), c) {
  register_module("ln_1", ln_1);
  register_module("attn", attn);
  register_module("ln_2", ln_2);
  register_module("mlp", mlp);
}

Tensor Gpt2Block::forward(const Tensor& x, KVCache* cache, size_t layer, std::span<const int64_t> cu_seqlens) const {
  const int64_t B = x.size(0), T = x.size(1), D = config_.head_dim();
  const int64_t H = attn.c_attn.weight.size(0) / (3 * D), HD = H * D;
  // Attention: qkv (B, T, 3HD) -> q, k, v (B, H, T, D) -> fused causal attention -> (B, T, HD).
  const Tensor qkv = attn.c_attn.forward(ln_1.forward(x));
  std::vector<Tensor> parts = ag::split(qkv, {HD, HD, HD}, -1);
  auto heads = [&](const Tensor& t) { return ag::transpose(ag::reshape(t, {B, T, H, D}), 1, 2); };
  Tensor k = heads(parts[1]), v = heads(parts[2]);
  if (cache != nullptr) append_to_cache(*cache, layer, k, v);
  HT_CHECK(cache == nullptr || cu_seqlens.empty(), "gpt2: packed documents cannot decode with a KV cache");
  const Tensor y = ag::attention(heads(parts[0]), k, v, 1.0 / std::sqrt(static_cast<double>(D)), cu_seqlens);
  const Tensor merged = ag::reshape(ag::transpose(y, 1, 2), {B, T, HD});
  const Tensor h = attn.c_proj.forward(merged, /*residual=*/x);  // x + c_proj(merged)
  // MLP: C -> 4C -> GELU -> C.
  return mlp.c_proj.forward(mlp.c_fc.forward_gelu(ln_2.forward(h)), /*residual=*/h);
}

Gpt2Model::Gpt2Model(const ModelConfig& c, ModelBuild build) : LanguageModel(c, std::move(build)) {
  const nn::ParamInit root{build_.seed, "", build_.tp, build_.fill_parameters};
  const ModelPart& p = part();
  if (p.embed || p.head) {
    wte = std::make_unique<nn::Embedding>(root.child("wte"), c.padded_vocab(), c.hidden);
    register_module("wte", *wte);
  }
  if (p.embed) {
    wpe = std::make_unique<nn::Embedding>(root.child("wpe"), c.max_seq_len, c.hidden);
    register_module("wpe", *wpe);
  }
  h.resize(static_cast<size_t>(c.layers));
  for (int64_t i = p.first_layer; i <= p.last(c); ++i) {
    const std::string name = "h." + std::to_string(i);
    h[static_cast<size_t>(i)] = std::make_unique<Gpt2Block>(root.child(name), config_);
    register_module(name, *h[static_cast<size_t>(i)]);
  }
  if (p.head) {
    ln_f = std::make_unique<nn::LayerNorm>(root.child("ln_f"), c.hidden, c.norm_eps);
    register_module("ln_f", *ln_f);
  }
}

Tensor Gpt2Model::embed(const Tensor& ids, int64_t position_offset, std::span<const int64_t> cu_seqlens) const {
  HT_CHECK(wpe, "gpt2: this part has no embedding");
  const int64_t T = ids.size(1);
  const DType dtype = compute_dtype();
  if (!cu_seqlens.empty()) {  // packed documents: each one's positions start at 0
    HT_CHECK(position_offset == 0, "gpt2: packed documents start at position 0, not {}", position_offset);
    const std::vector<int64_t> p = ops::segment_positions(cu_seqlens);
    HT_CHECK(static_cast<int64_t>(p.size()) == ids.numel(), "gpt2: document offsets cover {} tokens, the batch has {}",
             p.size(), ids.numel());
    Tensor positions = empty(ids.shape(), DType::i64);
    std::copy(p.begin(), p.end(), positions.data<int64_t>());
    return ag::add(wte->forward(ids, dtype), wpe->forward(positions.to(wpe->weight.device()), dtype));
  }
  HT_CHECK(position_offset + T <= config_.max_seq_len, "gpt2: positions {}..{} exceed max_seq_len {}",
           position_offset, position_offset + T - 1, config_.max_seq_len);
  const Tensor positions = arange(static_cast<double>(position_offset), static_cast<double>(position_offset + T), 1,
                                  DType::i64, wpe->weight.device());
  return ag::add(wte->forward(ids, dtype), wpe->forward(positions, dtype));  // (B, T, C) + (T, C)
}

Tensor Gpt2Model::block(int64_t layer, const Tensor& x, KVCache* cache, std::span<const int64_t> cu_seqlens) const {
  HT_CHECK(layer >= 0 && layer < config_.layers && h[static_cast<size_t>(layer)], "gpt2: this part has no layer {}", layer);
  return h[static_cast<size_t>(layer)]->forward(x, cache, static_cast<size_t>(layer), cu_seqlens);
}

Tensor Gpt2Model::head_input(const Tensor& x) const {
  HT_CHECK(ln_f, "gpt2: this part has no head");
  return ln_f->forward(x);
}

Tensor Gpt2Model::head_weight(const Tensor& like) const {
  return nn::compute_copy(wte->weight, like);  // tied head: this rank's vocab rows of wte
}

}  // namespace hetu
