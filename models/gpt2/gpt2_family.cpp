// GPT-2's registry entry (models/model_family.h): learned positions, tied embeddings, HF's
// GPT2LMHeadModel names (tensors under "transformer.", Conv1D weights stored transposed).
#include <fmt/core.h>

#include "models/gpt2/gpt2_model.h"
#include "models/model_family.h"

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

// hetu's names and shapes of every parameter (the checkpoint catalogue, app/cmd_ckpt.h).
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

std::unique_ptr<LanguageModel> build_gpt2(const ModelConfig& config, ModelBuild build) {
  return std::make_unique<Gpt2Model>(config, std::move(build));
}

}  // namespace

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
      .build = build_gpt2,
      .sharding = gpt2_sharding,
      .num_params = gpt2_num_params,
      .parameter_shapes = gpt2_parameter_shapes,
      .hf = {.model_type = "gpt2",
             .architecture = "GPT2LMHeadModel",
             .tensor_prefix = "transformer.",
             .embedding = "wte.weight",
             .transposed_suffixes = {".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight",
                                     ".mlp.c_proj.weight"}},
  };
  return family;
}

}  // namespace hetu
