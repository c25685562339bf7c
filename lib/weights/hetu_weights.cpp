// hetu's own checkpoints as a `hetu ckpt` format: a step folder (or its checkpoint.h5, or a
// checkpoints / run folder for its latest step) read through checkpoint::CheckpointManager, the model
// rebuilt from the job config stored with it; and written as a checkpoints folder that
// `hetu generate` and `ckpt convert` load (parameters and config; no optimizer state).
#include <fmt/core.h>

#include <filesystem>

#include "lib/checkpoint/checkpoint.h"
#include "lib/config/config.h"
#include "lib/models/model_family.h"
#include "lib/optim/adamw.h"
#include "lib/util/build_info.h"
#include "lib/util/error.h"
#include "lib/weights/model_weights.h"

namespace hetu::weights {

namespace fs = std::filesystem;

std::string resolve_hetu_checkpoint(const std::string& path) {
  fs::path chosen(path);
  HT_USAGE_CHECK(fs::exists(chosen), "{}: no such checkpoint or folder", path);
  if (fs::is_directory(chosen / "checkpoints")) chosen /= "checkpoints";
  if (fs::is_directory(chosen) && !fs::exists(chosen / "checkpoint.h5")) {
    std::optional<std::string> latest = checkpoint::CheckpointManager(chosen.string(), 1).latest();
    HT_USAGE_CHECK(latest.has_value(), "{}: no hetu checkpoint in this folder", path);
    chosen = *latest;
  }
  return chosen.string();
}

ModelWeights load_hetu_weights(const std::string& path) {
  const std::string step_path = resolve_hetu_checkpoint(path);
  // load() reads any step folder or file; the manager's own folder only matters for saving.
  checkpoint::CheckpointData data = checkpoint::CheckpointManager(".", 1).load(step_path);
  auto config = data.metadata.find("config");
  HT_USAGE_CHECK(config != data.metadata.end(), "{}: the checkpoint holds no job config (metadata 'config')",
                 step_path);
  ModelWeights w;
  w.model = config::load_job_config_text(config->second, step_path + " (stored config)", {}).config.model;
  w.step = data.step;
  w.job_toml = config->second;
  int64_t optimizer_tensors = 0;
  for (auto& [name, tensor] : data.tensors) {
    if (optim::is_state_name(name)) {
      ++optimizer_tensors;
      continue;
    }
    w.params[name] = std::move(tensor);
  }
  if (optimizer_tensors > 0) {
    w.notes.push_back(
        fmt::format("dropped {} optimizer-state tensors (optim.m/*, optim.v/*): the output holds the "
                    "model parameters only",
                    optimizer_tensors));
  }
  return w;
}

namespace {

// A double as a TOML float ("10000.0", "1e-05").
std::string toml_float(double value) {
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
  return text;
}

}  // namespace

std::string synthesize_job_toml(const ModelConfig& m, const std::string& name) {
  const ModelFamily& family = model_family(m.arch);
  std::string tokenizer = "none";  // bytes, or the family's tokenizer when the vocab can be it
  if (m.vocab == 256) {
    tokenizer = "byte";
  } else if (m.vocab >= family.tokenizer_vocab) {
    tokenizer = family.tokenizer;
  }
  // The embedded default job with every model key overridden, as --set would.
  std::vector<std::string> overrides = {
      fmt::format("model.arch=\"{}\"", to_string(m.arch)),
      fmt::format("model.layers={}", m.layers),
      fmt::format("model.hidden={}", m.hidden),
      fmt::format("model.heads={}", m.heads),
      fmt::format("model.ffn_hidden={}", m.ffn_hidden),
      fmt::format("model.vocab={}", m.vocab),
      fmt::format("model.vocab_multiple={}", m.vocab_multiple),
      fmt::format("model.max_seq_len={}", m.max_seq_len),
      fmt::format("model.norm_eps={}", toml_float(m.norm_eps)),
      fmt::format("model.tie_embeddings={}", m.tie_embeddings ? "true" : "false"),
      fmt::format("data.tokenizer=\"{}\"", tokenizer),
      "job.name=\"converted\"",
      "job.out_dir=\"runs/converted\"",
  };
  if (family.grouped_kv_heads) overrides.push_back(fmt::format("model.kv_heads={}", m.kv_heads));
  if (family.rotary_positions) {
    overrides.push_back(fmt::format("model.rope_theta={}", toml_float(m.rope_theta)));
    overrides.push_back("model.rope_scaling=" + config::to_toml(m.rope_scaling));
  }
  const config::LoadedConfig defaults =
      config::load_job_config_text(default_job_toml(), std::string(kDefaultJobName), {});
  overrides.push_back(fmt::format("training.seq_len={}", std::min(defaults.config.training.seq_len, m.max_seq_len)));
  config::LoadedConfig loaded = config::load_job_config_text(default_job_toml(), name + " (as a hetu job)", overrides);
  loaded.config.source = name;
  HT_CHECK(loaded.config.model == m, "ckpt: the synthesized job does not reproduce the model config");
  return config::to_toml(loaded.config);
}

std::string save_hetu_weights(const std::string& out, const ModelWeights& weights, const SaveOptions& options) {
  prepare_output_folder(out);
  checkpoint::CheckpointData data;
  data.step = weights.step;
  for (const auto& [name, tensor] : weights.params) {
    data.tensors[name] = tensor.dtype() == options.dtype ? tensor : tensor.to(options.dtype);
  }
  data.metadata["config"] = weights.job_toml.empty() ? synthesize_job_toml(weights.model, out) : weights.job_toml;
  data.metadata["arch"] = std::string(to_string(weights.model.arch));
  return checkpoint::CheckpointManager(out, 1).save(data);
}

}  // namespace hetu::weights
