// GPT-2's registry entry (lib/models/model_family.h): learned positions, tied embeddings, HF's
// GPT2LMHeadModel names (tensors under "transformer.", Conv1D weights stored transposed).
#include <fmt/core.h>

#include "lib/models/gpt2/gpt2_model.h"
#include "lib/models/hf_config.h"
#include "lib/models/model_family.h"

namespace hetu {
namespace {

int64_t gpt2_num_params(const ModelConfig& m) {
  const int64_t C = m.hidden, F = m.ffn_hidden;
  const int64_t per_layer = 2 * 2 * C               // ln_1, ln_2 weight + bias
                            + C * 3 * C + 3 * C     // c_attn
                            + C * C + C             // attn c_proj
                            + C * F + F             // c_fc
                            + F * C + C;            // mlp c_proj
  const int64_t outside = m.vocab * C               // wte (tied LM head)
                          + m.max_seq_len * C + 2 * C;  // wpe, ln_f
  return m.layers * per_layer + outside;
}

// hetu's names and shapes of every parameter (the checkpoint catalogue, lib/weights/model_weights.h).
std::map<std::string, Shape> gpt2_parameter_shapes(const ModelConfig& m) {
  const int64_t C = m.hidden, V = m.padded_vocab(), F = m.ffn_hidden;
  std::map<std::string, Shape> out;
  out["wte.weight"] = {V, C};
  out["wpe.weight"] = {m.max_seq_len, C};
  out["ln_f.weight"] = out["ln_f.bias"] = {C};
  for (int64_t i = 0; i < m.layers; ++i) {
    const std::string h = fmt::format("h.{}.", i);
    out[h + "ln_1.weight"] = out[h + "ln_1.bias"] = out[h + "ln_2.weight"] = out[h + "ln_2.bias"] = {C};
    out[h + "attn.c_attn.weight"] = {3 * C, C};
    out[h + "attn.c_attn.bias"] = {3 * C};
    out[h + "attn.c_proj.weight"] = {C, C};
    out[h + "attn.c_proj.bias"] = {C};
    out[h + "mlp.c_fc.weight"] = {F, C};
    out[h + "mlp.c_fc.bias"] = {F};
    out[h + "mlp.c_proj.weight"] = {C, F};
    out[h + "mlp.c_proj.bias"] = {C};
  }
  return out;
}

// config.json as transformers' GPT2Config reads it (the caller adds torch_dtype).
nlohmann::json gpt2_to_hf_config(const ModelConfig& m) {
  nlohmann::json j = {{"architectures", {gpt2_family().hf.architecture}},
                      {"model_type", gpt2_family().hf.model_type},
                      {"vocab_size", m.vocab},
                      {"n_positions", m.max_seq_len},
                      {"n_embd", m.hidden},
                      {"n_layer", m.layers},
                      {"n_head", m.heads},
                      {"n_inner", m.ffn_hidden},
                      {"activation_function", "gelu_new"},
                      {"layer_norm_epsilon", m.norm_eps},
                      {"resid_pdrop", 0.0},
                      {"embd_pdrop", 0.0},
                      {"attn_pdrop", 0.0},
                      {"initializer_range", 0.02},
                      {"scale_attn_weights", true},
                      {"scale_attn_by_inverse_layer_idx", false},
                      {"reorder_and_upcast_attn", false},
                      {"tie_word_embeddings", true},
                      {"use_cache", true}};
  if (m.vocab == 50257) j["bos_token_id"] = j["eos_token_id"] = 50256;  // GPT-2's <|endoftext|>
  return j;
}

// The ModelConfig of a config.json; settings hetu's model cannot honour are refused by name.
ModelConfig gpt2_from_hf_config(const HfConfigReader& c) {
  ModelConfig m;
  m.arch = Arch::gpt2;
  m.layers = c.integer("n_layer");
  m.hidden = c.integer("n_embd");
  m.heads = m.kv_heads = c.integer("n_head");
  m.ffn_hidden = c.integer("n_inner", 4 * m.hidden);
  m.vocab = c.integer("vocab_size");
  m.max_seq_len =
      c.integer("n_positions", c.has("n_ctx") ? std::optional<int64_t>(c.integer("n_ctx")) : std::nullopt);
  m.norm_eps = c.number("layer_norm_epsilon", 1e-5);
  m.tie_embeddings = true;
  const std::string act = c.text("activation_function", "gelu_new");
  HT_USAGE_CHECK(act == "gelu_new" || act == "gelu_pytorch_tanh",
                 "{}: activation_function = \"{}\": hetu's GPT-2 uses "
                 "GELU with the tanh approximation (gelu_new)",
                 c.file(), act);
  c.expect("tie_word_embeddings", true, "hetu's GPT-2 ties the LM head to wte");
  c.expect("scale_attn_weights", true, "hetu's GPT-2 scales attention by 1/sqrt(head_dim)");
  c.expect("scale_attn_by_inverse_layer_idx", false, "not implemented by hetu's GPT-2");
  c.expect("add_cross_attention", false, "hetu's GPT-2 is a decoder without cross-attention");
  c.expect("reorder_and_upcast_attn", false, "not implemented by hetu's GPT-2");
  return m;
}

std::unique_ptr<LanguageModel> build_gpt2(const ModelConfig& config, ModelBuild build) {
  return std::make_unique<Gpt2Model>(config, std::move(build));
}

}  // namespace

// Note [Activation count]: per token, what Gpt2Block::forward's ops save for the backward
// (lib/autograd/functions.cpp), C hidden, F ffn_hidden, H heads of this tp rank:
//   ln_1: its input x and mean, rstd (C + 2); c_attn: ln_1's output (C); attention: q, k, v
//   (views of c_attn's output, 3C), its output (C, which c_proj's input reshapes) and lse (H);
//   ln_2: its input h and mean, rstd (C + 2); c_fc: ln_2's output (C); gelu: c_fc's output (F);
//   c_proj: gelu's output (F). The residual adds save nothing; the block's output is the next
//   block's x. Replicated over tp: x, ln_1's and ln_2's outputs, h and the statistics (4C + 4);
//   sharded: q, k, v, the attention output, lse and both MLP tensors (4C + H + 2F).
// The backward's workspace: the MLP's two F-wide gradients and the incoming C-wide one.
ActivationCount gpt2_activations(const ModelConfig& m) {
  const double C = static_cast<double>(m.hidden), F = static_cast<double>(m.ffn_hidden), H = static_cast<double>(m.heads);
  return {.layer = {.sharded = 4 * C + H + 2 * F, .replicated = 4 * C + 4}, .workspace = {.sharded = 2 * F, .replicated = C}};
}

const ModelFamily& gpt2_family() {
  static const ModelFamily family{
      .arch = Arch::gpt2,
      .name = "gpt2",
      .flavors = gpt2_flavors,
      .grouped_kv_heads = false,
      .rotary_positions = false,
      .always_ties_embeddings = true,
      .ffn_hidden_required = false,
      .default_rope_theta = 0.0,
      .tokenizer = "gpt2",
      .tokenizer_vocab = 50257,
      .build = build_gpt2,
      .sharding = gpt2_sharding,
      .num_params = gpt2_num_params,
      .parameter_shapes = gpt2_parameter_shapes,
      .activations = gpt2_activations,
      .hf = {.model_type = "gpt2",
             .architecture = "GPT2LMHeadModel",
             .tensor_prefix = "transformer.",
             .embedding = "wte.weight",
             .transposed_suffixes = {".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight",
                                     ".mlp.c_proj.weight"},
             .to_config = gpt2_to_hf_config,
             .from_config = gpt2_from_hf_config,
             // Dropout is not applied (hetu trains without it); summary_* configure the heads of
             // GPT2DoubleHeadsModel and GPT2ForSequenceClassification, not the LM.
             .harmless_keys = {"attn_pdrop", "embd_pdrop", "resid_pdrop", "summary_activation", "summary_first_dropout",
                               "summary_proj_to_labels", "summary_type", "summary_use_proj"}},
  };
  return family;
}

}  // namespace hetu
