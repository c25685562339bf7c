// Hugging Face checkpoints as a `hetu ckpt` format: config.json (model_type gpt2 or llama,
// the fields transformers reads) and safetensors weights, single or sharded. See
// Note [HF layouts] for how tensors map between hetu and HF.
#include <fmt/core.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "lib/checkpoint/safetensors_index.h"
#include "lib/config/config.h"
#include "lib/models/hf_config.h"
#include "lib/models/model_family.h"
#include "lib/util/atomic_file.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"
#include "lib/weights/model_weights.h"

namespace hetu::weights {

namespace fs = std::filesystem;
using nlohmann::json;

// Note [HF layouts]
// Names: LLaMA's hetu names are HF's (model.embed_tokens, model.layers.N.self_attn.q_proj,
// ..., lm_head). GPT-2's get HF's "transformer." prefix on the way out (what
// GPT2LMHeadModel.save_pretrained writes); both spellings are read. Tied heads are not stored.
// Layout: HF GPT-2 keeps its four projection weights (attn.c_attn, attn.c_proj, mlp.c_fc,
// mlp.c_proj) in Conv1D's (in, out) order, so they are transposed; every other tensor is
// already the same. LLaMA q/k rows need no permutation: hetu's rotary embedding pairs
// dimension i with i + D/2 of each head ("rotate half", lib/ops/cpu/rotary.cpp), which is the
// layout of HF's LlamaAttention (HF permutes Meta's interleaved checkpoints into it on import).
// Vocab: HF tensors have vocab_size rows; hetu's embedding (and lm_head) has the padded vocab,
// whose extra rows are never looked up and are cut off the logits. They are dropped on export
// and come back as zeros on import.

namespace {

constexpr const char* kConfigFile = "config.json";
constexpr const char* kStepKey = "hetu.step";
constexpr const char* kJobKey = "hetu.job";

// HF stores it transposed (GPT-2's Conv1D weights; the family's HfNames list them).
bool is_conv1d(const ModelConfig& m, const std::string& name) {
  for (std::string_view suffix : model_family(m.arch).hf.transposed_suffixes) {
    if (name.size() > suffix.size() && name.ends_with(suffix)) return true;
  }
  return false;
}

bool has_vocab_rows(const ModelConfig& m, const std::string& name) {
  return name == model_family(m.arch).hf.embedding || name == "lm_head.weight";
}

std::string hf_name(const ModelConfig& m, const std::string& name) {
  return std::string(model_family(m.arch).hf.tensor_prefix) + name;
}

std::string torch_dtype(DType dtype) { return dtype == DType::bf16 ? "bfloat16" : "float32"; }

// "gpt2, llama": the HF model_types of the registered families.
std::string hf_model_types() {
  std::vector<std::string> types;
  for (const ModelFamily* f : model_families()) types.emplace_back(f->hf.model_type);
  return join(types, ", ");
}

// config.json: the family's fields and the dtype the weights are stored in.
json config_json(const ModelConfig& m, DType dtype) {
  json j = model_family(m.arch).hf.to_config(m);
  j["torch_dtype"] = torch_dtype(dtype);
  return j;
}

ModelConfig model_from_config(const HfConfigReader& c) {
  const std::string type = c.text("model_type", "");
  const ModelFamily* family = find_hf_model_family(type);
  if (!family) HT_USAGE_ERROR("{}: model_type \"{}\" is not one hetu converts ({})", c.file(), type, hf_model_types());
  const ModelConfig m = family->hf.from_config(c);
  std::vector<std::string_view> harmless = kHfMetadataKeys;
  harmless.insert(harmless.end(), family->hf.harmless_keys.begin(), family->hf.harmless_keys.end());
  c.refuse_unread(harmless);
  return m;
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return a.numel() == 0 ||
         std::memcmp(ca.raw_data(), cb.raw_data(), static_cast<size_t>(a.numel()) * dtype_size(a.dtype())) == 0;
}

// Equal shapes apart from how the vocab is padded (not in config.json) and the flavor name.
bool same_model(ModelConfig a, ModelConfig b) {
  a.vocab_multiple = b.vocab_multiple;
  a.flavor = b.flavor;
  return a == b;
}

}  // namespace

std::vector<std::string> save_hf_weights(const std::string& out, const ModelWeights& w, const SaveOptions& options) {
  prepare_output_folder(out);
  const ModelConfig& m = w.model;
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& [name, shape] : expected_parameters(m)) {
    Tensor t = w.params.at(name);
    if (has_vocab_rows(m, name)) t = t.narrow(0, 0, m.vocab);
    if (is_conv1d(m, name)) t = t.transpose(0, 1);
    tensors.emplace_back(hf_name(m, name), (t.dtype() == options.dtype ? t : t.to(options.dtype)).contiguous());
  }
  std::map<std::string, std::string> metadata = {{"format", "pt"}, {kStepKey, std::to_string(w.step)}};
  if (!w.job_toml.empty()) metadata[kJobKey] = w.job_toml;
  std::vector<std::string> files = checkpoint::write_safetensors_folder(out, tensors, metadata, options.max_shard_bytes);
  write_file_atomic((fs::path(out) / kConfigFile).string(), config_json(m, options.dtype).dump(2) + "\n");
  files.push_back(kConfigFile);
  return files;
}

ModelWeights load_hf_weights(const std::string& path) {
  const fs::path p(path);
  const fs::path folder = fs::is_directory(p) ? p : p.parent_path().empty() ? fs::path(".") : p.parent_path();
  const fs::path config_path = folder / kConfigFile;
  HT_USAGE_CHECK(fs::exists(config_path), "{}: no {} next to the weights (hetu needs it for the model's shape)", path,
                 kConfigFile);
  json config;
  try {
    std::ifstream in(config_path);
    config = json::parse(in);
  } catch (const json::exception& e) {
    HT_USAGE_ERROR("{}: not valid JSON: {}", config_path.string(), e.what());
  }
  HT_USAGE_CHECK(config.is_object(), "{}: expected a JSON object", config_path.string());
  ModelWeights w;
  w.model = model_from_config(HfConfigReader(config, config_path.string()));
  checkpoint::SafetensorsFolder st = checkpoint::read_safetensors_folder(path);

  // A hetu job stored by `ckpt convert --to hf` is kept when it describes this model.
  if (auto job = st.metadata.find(kJobKey); job != st.metadata.end()) {
    std::optional<ModelConfig> stored;
    try {
      stored = config::load_job_config_text(job->second, path + " (hetu.job metadata)", {}).config.model;
    } catch (const UsageError& e) {
      w.notes.push_back(fmt::format("ignored the hetu job in the safetensors metadata: {}", e.message()));
    }
    if (stored && same_model(*stored, w.model)) {
      w.model = *stored;
      w.job_toml = job->second;
    } else if (stored) {
      w.notes.push_back("the hetu job in the safetensors metadata does not match config.json; using config.json");
    }
  }
  if (auto step = st.metadata.find(kStepKey); step != st.metadata.end()) {
    std::optional<int64_t> value = parse_int64(step->second);
    HT_USAGE_CHECK(value && *value >= 0, "{}: metadata {} = '{}' is not a step number", path, kStepKey, step->second);
    w.step = *value;
  }

  const ModelConfig& m = w.model;
  for (const auto& [name, shape] : expected_parameters(m)) {
    // GPT-2 names with or without "transformer." (old files, e.g. the hub's gpt2, lack it).
    std::string key = hf_name(m, name);
    if (!st.tensors.count(key) && st.tensors.count(name)) key = name;
    auto it = st.tensors.find(key);
    if (it == st.tensors.end()) continue;  // check_parameters names what is missing
    Tensor t = it->second;
    st.tensors.erase(it);
    HT_USAGE_CHECK(t.dim() == 2 || !is_conv1d(m, name), "{}: tensor {} has shape {}, expected 2 dimensions", path, key,
                   shape_str(t.shape()));
    if (is_conv1d(m, name)) t = t.transpose(0, 1).contiguous();
    if (has_vocab_rows(m, name) && t.dim() == 2 && t.size(0) == m.vocab && shape[0] > m.vocab) {
      Tensor padded = zeros(shape, t.dtype());
      padded.narrow(0, 0, m.vocab).copy_from(t);
      t = padded;
    }
    w.params[name] = t;
  }
  // What is left must be buffers HF used to save, or a tied head equal to the embedding.
  int64_t buffers = 0;
  for (const auto& [key, t] : st.tensors) {
    if (key.ends_with(".attn.bias") || key.ends_with(".attn.masked_bias") || key.ends_with(".rotary_emb.inv_freq")) {
      ++buffers;
      continue;
    }
    if (key == "lm_head.weight" && m.tie_embeddings) {
      const std::string embedding(model_family(m.arch).hf.embedding);
      auto e = w.params.find(embedding);
      if (e == w.params.end()) continue;  // check_parameters names the missing embedding
      HT_USAGE_CHECK(bitwise_equal(t, e->second.narrow(0, 0, std::min(m.vocab, e->second.size(0)))),
                     "{}: lm_head.weight differs from {}, but the model ties them (tie_word_embeddings)", path,
                     embedding);
      w.notes.push_back("lm_head.weight equals the embedding (tied); not stored separately");
      continue;
    }
    w.params[key] = t;  // check_parameters reports it as unexpected
  }
  if (buffers > 0)
    w.notes.push_back(fmt::format("ignored {} non-parameter buffers (attention masks, rotary tables)", buffers));
  return w;
}

}  // namespace hetu::weights
