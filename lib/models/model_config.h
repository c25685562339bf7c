// The shape of a transformer language model, shared by GPT-2 and LLaMA, and the named
// flavors (presets with the real published shapes). The job file's [model] table resolves
// to one ModelConfig: flavor first, explicit keys override.
//
//   ModelConfig m = *find_flavor(Arch::gpt2, "124m");   // 12 layers, 768 hidden, 12 heads
//   m.padded_vocab();                                    // 50304: 50257 rounded up to 128
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hetu {

enum class Arch { gpt2, llama };

std::string_view to_string(Arch arch);
std::optional<Arch> parse_arch(std::string_view text);

// LLaMA's rotary frequency scaling (HF config.json rope_scaling). llama3: Llama 3.1/3.2's
// stretch of the long wavelengths for long contexts (the formula: lib/models/llama/llama_rope.h).
enum class RopeScalingType { none, llama3 };

std::string_view to_string(RopeScalingType type);

struct RopeScaling {
  RopeScalingType type = RopeScalingType::none;
  double factor = 1;                              // the fields below matter for llama3 only
  double low_freq_factor = 1;
  double high_freq_factor = 4;
  int64_t original_max_position_embeddings = 0;   // the context length trained before scaling
  bool operator==(const RopeScaling&) const = default;
};

struct ModelConfig {
  Arch arch = Arch::gpt2;
  std::string flavor;           // the preset it came from; empty when fully explicit
  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;         // grouped-query attention (llama); == heads for gpt2
  int64_t ffn_hidden = 0;       // MLP inner size (4 * hidden for gpt2)
  int64_t vocab = 0;            // real vocabulary size (tokenizer)
  int64_t vocab_multiple = 128; // embedding rows are padded to a multiple (tp splits them)
  int64_t max_seq_len = 0;
  double rope_theta = 0;        // llama only
  RopeScaling rope_scaling;     // llama only
  double norm_eps = 1e-5;
  bool tie_embeddings = true;   // gpt2 always; llama per flavor

  int64_t head_dim() const { return heads > 0 ? hidden / heads : 0; }
  int64_t padded_vocab() const;
  // Parameters of the (unpadded) model, counting a tied embedding once.
  int64_t num_params() const;
  bool operator==(const ModelConfig&) const = default;
};

std::optional<ModelConfig> find_flavor(Arch arch, std::string_view name);
std::vector<std::string> flavor_names(Arch arch);

// Per-architecture presets, defined in lib/models/<arch>/<arch>_flavors.cpp.
const std::vector<ModelConfig>& gpt2_flavors();
const std::vector<ModelConfig>& llama_flavors();

}  // namespace hetu
