// LLaMA's registry entry (lib/models/model_family.h): rotary positions, grouped kv heads, an
// LM head tied per flavor, HF's LlamaForCausalLM names (hetu's names are HF's).
#include <fmt/core.h>

#include "lib/models/hf_config.h"
#include "lib/models/llama/llama_model.h"
#include "lib/models/model_family.h"

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

// hetu's names and shapes of every parameter (the checkpoint catalogue, lib/weights/model_weights.h).
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

// config.json as transformers' LlamaConfig reads it (the caller adds torch_dtype).
nlohmann::json llama_to_hf_config(const ModelConfig& m) {
  return nlohmann::json{{"architectures", {llama_family().hf.architecture}},
                        {"model_type", llama_family().hf.model_type},
                        {"vocab_size", m.vocab},
                        {"hidden_size", m.hidden},
                        {"intermediate_size", m.ffn_hidden},
                        {"num_hidden_layers", m.layers},
                        {"num_attention_heads", m.heads},
                        {"num_key_value_heads", m.kv_heads},
                        {"head_dim", m.head_dim()},
                        {"max_position_embeddings", m.max_seq_len},
                        {"rms_norm_eps", m.norm_eps},
                        {"rope_theta", m.rope_theta},
                        {"rope_scaling", rope_scaling_json(m.rope_scaling)},
                        {"hidden_act", "silu"},
                        {"attention_bias", false},
                        {"attention_dropout", 0.0},
                        {"mlp_bias", false},
                        {"pretraining_tp", 1},
                        {"initializer_range", 0.02},
                        {"tie_word_embeddings", m.tie_embeddings},
                        {"use_cache", true}};
}

// The ModelConfig of a config.json; settings hetu's model cannot honour are refused by name.
ModelConfig llama_from_hf_config(const HfConfigReader& c) {
  ModelConfig m;
  m.arch = Arch::llama;
  m.layers = c.integer("num_hidden_layers");
  m.hidden = c.integer("hidden_size");
  m.heads = c.integer("num_attention_heads");
  m.kv_heads = c.integer("num_key_value_heads", m.heads);
  m.ffn_hidden = c.integer("intermediate_size");
  m.vocab = c.integer("vocab_size");
  m.max_seq_len = c.integer("max_position_embeddings");
  m.norm_eps = c.number("rms_norm_eps", 1e-6);  // transformers' LlamaConfig default
  m.tie_embeddings = c.flag("tie_word_embeddings", false);
  if (c.has("head_dim") && m.hidden % m.heads == 0) {
    c.expect("head_dim", m.hidden / m.heads, "hetu's LLaMA uses head_dim = hidden_size / num_attention_heads");
  }
  c.expect("hidden_act", "silu", "hetu's LLaMA MLP is SwiGLU (silu)");
  c.expect("attention_bias", false, "hetu's LLaMA has no attention biases");
  c.expect("mlp_bias", false, "hetu's LLaMA has no MLP biases");
  const RopeSettings rope = rope_settings_from(c, 10000.0);
  m.rope_theta = rope.theta;
  m.rope_scaling = rope.scaling;
  return m;
}

std::unique_ptr<LanguageModel> build_llama(const ModelConfig& config, ModelBuild build) {
  return std::make_unique<LlamaModel>(config, std::move(build));
}

}  // namespace

// Note [Activation count]: per token, what LlamaBlock::forward's ops save for the backward
// (lib/autograd/functions.cpp), C hidden, F ffn_hidden, H heads and K = kv_heads x head_dim
// of this tp rank: input_layernorm: x and rstd (C + 1); q/k/v_proj: its output (C); rotary
// saves nothing, attention keeps the rotated q and k, v (C + 2K), its output (C, which o_proj's
// input reshapes) and lse (H); post_attention_layernorm: h and rstd (C + 1); gate/up_proj: its
// output (C); silu: gate's output, mul: silu's and up's outputs, down_proj: their product (4F).
// Replicated over tp: x, h, both norms' outputs and rstd (4C + 2); sharded: q, k, v, the
// attention output, lse and the MLP's four tensors (2C + 2K + H + 4F).
// The backward's workspace: the MLP's three F-wide gradients and the incoming C-wide one.
ActivationCount llama_activations(const ModelConfig& m) {
  const double C = static_cast<double>(m.hidden), F = static_cast<double>(m.ffn_hidden), H = static_cast<double>(m.heads);
  const double K = static_cast<double>(m.kv_heads * m.head_dim());
  return {.layer = {.sharded = 2 * C + 2 * K + H + 4 * F, .replicated = 4 * C + 2},
          .workspace = {.sharded = 3 * F, .replicated = C}};
}

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
      .tokenizer = "none",
      .tokenizer_vocab = 0,
      .build = build_llama,
      .sharding = llama_sharding,
      .num_params = llama_num_params,
      .parameter_shapes = llama_parameter_shapes,
      .activations = llama_activations,
      .hf = {.model_type = "llama",
             .architecture = "LlamaForCausalLM",
             .tensor_prefix = "",
             .embedding = "model.embed_tokens.weight",
             .transposed_suffixes = {},
             .to_config = llama_to_hf_config,
             .from_config = llama_from_hf_config,
             // Dropout is not applied (hetu trains without it); pretraining_tp only split Meta's
             // matmuls into slices with the same result.
             .harmless_keys = {"attention_dropout", "pretraining_tp"}},
  };
  return family;
}

}  // namespace hetu
