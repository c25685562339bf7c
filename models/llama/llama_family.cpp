// LLaMA's registry entry (models/model_family.h): rotary positions, grouped kv heads, an
// LM head tied per flavor, HF's LlamaForCausalLM names (hetu's names are HF's).
#include <fmt/core.h>

#include "models/llama/llama_model.h"
#include "models/model_family.h"

namespace hetu {
namespace {

int64_t llama_num_params(const ModelConfig& m) {
  const int64_t C = m.hidden, kv_dim = m.kv_heads * m.head_dim();
  const int64_t per_layer = 2 * C                               // input / post-attention RMSNorm
                            + C * C + 2 * C * kv_dim + C * C    // q, k, v, o
                            + 3 * C * m.ffn_hidden;             // gate, up, down
  int64_t outside = m.vocab * C + C;                            // token embedding, final norm
  if (!m.tie_embeddings) outside += m.vocab * C;                // lm_head
  return m.layers * per_layer + outside;
}

// hetu's names and shapes of every parameter (the checkpoint catalogue, app/cmd_ckpt.h).
std::map<std::string, Shape> llama_parameter_shapes(const ModelConfig& m) {
  const int64_t C = m.hidden, V = m.padded_vocab(), F = m.ffn_hidden, kv = m.kv_heads * m.head_dim();
  std::map<std::string, Shape> out;
  out["model.embed_tokens.weight"] = {V, C};
  out["model.norm.weight"] = {C};
  if (!m.tie_embeddings) out["lm_head.weight"] = {V, C};
  for (int64_t i = 0; i < m.layers; ++i) {
    const std::string h = fmt::format("model.layers.{}.", i);
    out[h + "input_layernorm.weight"] = out[h + "post_attention_layernorm.weight"] = {C};
    out[h + "self_attn.q_proj.weight"] = {m.heads * m.head_dim(), C};
    out[h + "self_attn.k_proj.weight"] = out[h + "self_attn.v_proj.weight"] = {kv, C};
    out[h + "self_attn.o_proj.weight"] = {C, m.heads * m.head_dim()};
    out[h + "mlp.gate_proj.weight"] = out[h + "mlp.up_proj.weight"] = {F, C};
    out[h + "mlp.down_proj.weight"] = {C, F};
  }
  return out;
}

std::unique_ptr<LanguageModel> build_llama(const ModelConfig& config, ModelBuild build) {
  return std::make_unique<LlamaModel>(config, std::move(build));
}

}  // namespace

const ModelFamily& llama_family() {
  static const ModelFamily family{
      .arch = Arch::llama,
      .name = "llama",
      .flavors = llama_flavors,
      .grouped_kv_heads = true,
      .rotary_positions = true,
      .always_ties_embeddings = false,
      .ffn_hidden_required = true,
      .default_rope_theta = 10000.0,
      .build = build_llama,
      .sharding = llama_sharding,
      .num_params = llama_num_params,
      .parameter_shapes = llama_parameter_shapes,
      .hf = {.model_type = "llama",
             .architecture = "LlamaForCausalLM",
             .tensor_prefix = "",
             .embedding = "model.embed_tokens.weight",
             .transposed_suffixes = {}},
  };
  return family;
}

}  // namespace hetu
