// ModelConfig helpers: architecture names, vocab padding, parameter count, flavor lookup.
#include "models/model_config.h"

namespace hetu {

std::string_view to_string(Arch arch) { return arch == Arch::gpt2 ? "gpt2" : "llama"; }

std::string_view to_string(RopeScalingType type) {
  switch (type) {
    case RopeScalingType::none: return "none";
    case RopeScalingType::llama3: return "llama3";
  }
  return "none";
}

std::optional<Arch> parse_arch(std::string_view text) {
  if (text == "gpt2") return Arch::gpt2;
  if (text == "llama") return Arch::llama;
  return std::nullopt;
}

int64_t ModelConfig::padded_vocab() const {
  if (vocab_multiple <= 1) return vocab;
  return (vocab + vocab_multiple - 1) / vocab_multiple * vocab_multiple;
}

int64_t ModelConfig::num_params() const {
  const int64_t C = hidden;
  const int64_t kv_dim = kv_heads * head_dim();
  int64_t per_layer = 0;
  int64_t outside = vocab * C;  // token embedding
  if (arch == Arch::gpt2) {
    per_layer = 2 * 2 * C                    // ln_1, ln_2 weight + bias
                + C * 3 * C + 3 * C          // c_attn
                + C * C + C                  // attn c_proj
                + C * ffn_hidden + ffn_hidden  // c_fc
                + ffn_hidden * C + C;        // mlp c_proj
    outside += max_seq_len * C + 2 * C;      // wpe, ln_f
  } else {
    per_layer = 2 * C                        // input / post-attention RMSNorm
                + C * C + 2 * C * kv_dim + C * C  // q, k, v, o
                + 3 * C * ffn_hidden;        // gate, up, down
    outside += C;                            // final norm
    if (!tie_embeddings) outside += vocab * C;
  }
  return layers * per_layer + outside;
}

static const std::vector<ModelConfig>& flavors_of(Arch arch) {
  return arch == Arch::gpt2 ? gpt2_flavors() : llama_flavors();
}

std::optional<ModelConfig> find_flavor(Arch arch, std::string_view name) {
  for (const ModelConfig& flavor : flavors_of(arch)) {
    if (flavor.flavor == name) return flavor;
  }
  return std::nullopt;
}

std::vector<std::string> flavor_names(Arch arch) {
  std::vector<std::string> names;
  for (const ModelConfig& flavor : flavors_of(arch)) names.push_back(flavor.flavor);
  return names;
}

}  // namespace hetu
