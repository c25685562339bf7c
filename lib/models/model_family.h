// The model-family registry: one entry per family (lib/models/<arch>/<arch>_family.cpp) with
// its flavors, the job-file keys it accepts, how to build it, its sharding plan, its
// parameter count and training-tape count (the sources of the planner's cost facts,
// lib/plan/model_facts.h) and its
// Hugging Face names and config.json. Code outside lib/models/<arch>/ asks the entry instead of switching on Arch.
//
//   const ModelFamily& f = model_family(Arch::llama);
//   f.rotary_positions;                       // true: accepts rope_theta and rope_scaling
//   const ModelFamily* g = find_model_family("gpt2");   // nullptr for an unknown name
//
// Adding a family: its folder lib/models/<arch>/ (model, flavors, sharding, <arch>_family.cpp),
// one Arch value (model_config.h) and one line in model_families() (model_family.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "lib/core/shape.h"
#include "lib/models/language_model.h"
#include "lib/models/model_config.h"
#include "lib/models/model_sharding.h"

namespace hetu {

class HfConfigReader;  // lib/models/hf_config.h

// How the family's tensors and config are named in a Hugging Face checkpoint.
struct HfNames {
  std::string_view model_type;      // config.json "model_type"
  std::string_view architecture;    // config.json "architectures"[0]
  std::string_view tensor_prefix;   // prepended to hetu's parameter names ("transformer." for GPT-2)
  std::string_view embedding;       // hetu's name of the token embedding (a tied lm_head equals it)
  // Suffixes of the weights HF stores transposed (GPT-2's Conv1D: in x out).
  std::vector<std::string_view> transposed_suffixes;
  // config.json's fields (lib/models/hf_config.h; torch_dtype is the caller's) and back.
  nlohmann::json (*to_config)(const ModelConfig& config);
  ModelConfig (*from_config)(const HfConfigReader& config_json);
  // Keys of this family's config.json that from_config may leave unread because they do not
  // change what hetu computes (beyond kHfMetadataKeys); any other unread key is refused.
  std::vector<std::string_view> harmless_keys;
};

// Elements per token one layer's training tape holds, counted from the family's forward: what
// each op saves for its backward (Note [Activation count] in lib/models/<arch>/<arch>_family.cpp).
// `sharded`: split over the tp ranks (q/k/v, attention output, MLP tensors); `replicated`: whole
// on every tp rank (the residual stream, norm inputs and outputs, their statistics).
struct TapeElements {
  double sharded = 0, replicated = 0;
};
struct ActivationCount {
  TapeElements layer;      // kept from a layer's forward until its backward
  TapeElements workspace;  // the most one layer's backward holds beyond that (its gradients in flight)
};

struct ModelFamily {
  Arch arch;
  std::string_view name;                          // the job file's model.arch
  const std::vector<ModelConfig>& (*flavors)();   // presets, lib/models/<arch>/<arch>_flavors.cpp
  // Job-file keys: which the family accepts and what an explicit shape defaults to.
  bool grouped_kv_heads;          // accepts model.kv_heads (else kv_heads == heads)
  bool rotary_positions;          // accepts rope_theta / rope_scaling (else a learned position table)
  bool always_ties_embeddings;    // model.tie_embeddings = false is refused
  bool ffn_hidden_required;       // an explicit shape must give ffn_hidden (else 4 x hidden)
  double default_rope_theta;      // for an explicit shape (0 without rotary positions)
  // data.tokenizer for a checkpoint with at least tokenizer_vocab rows (GPT-2's BPE);
  // "none" (vocab 0) when hetu has no tokenizer for the family.
  std::string_view tokenizer;
  int64_t tokenizer_vocab;
  std::unique_ptr<LanguageModel> (*build)(const ModelConfig& config, ModelBuild build);
  const ModelSharding& (*sharding)();
  // Parameters of the unpadded model, a tied embedding once (ModelConfig::num_params).
  int64_t (*num_params)(const ModelConfig& config);
  // hetu's name and shape of every parameter of the whole model (padded vocab rows included).
  std::map<std::string, Shape> (*parameter_shapes)(const ModelConfig& config);
  // Elements per token of one layer's tape (per sequence of config.max_seq_len or shorter).
  ActivationCount (*activations)(const ModelConfig& config);
  HfNames hf;

  // Rows of the learned position table (no FLOPs; 0 with rotary positions).
  int64_t position_rows(const ModelConfig& config) const { return rotary_positions ? 0 : config.max_seq_len; }
};

// Every registered family, in the order they are listed to users.
const std::vector<const ModelFamily*>& model_families();
// The entry of `arch` (throws naming the Arch value when a family is not registered).
const ModelFamily& model_family(Arch arch);
// The entry named `name` (a job file's model.arch), or nullptr.
const ModelFamily* find_model_family(std::string_view name);
// The entry whose config.json model_type is `model_type`, or nullptr.
const ModelFamily* find_hf_model_family(std::string_view model_type);
// "gpt2, llama": the names for an error message.
std::string model_family_names();

// The families' entries, defined in lib/models/<arch>/<arch>_family.cpp.
const ModelFamily& gpt2_family();
const ModelFamily& llama_family();

}  // namespace hetu
