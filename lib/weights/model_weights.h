// The checkpoint formats of `hetu ckpt` around one neutral form, ModelWeights: a model's
// parameters under hetu's names and layouts (2-D weights (out, in), embedding rows padded to
// the padded vocab), its ModelConfig, step and job config. Each format has a load and a
// save (hetu_weights.cpp, hf_weights.cpp, llmc_weights.cpp); `hetu ckpt convert` is load + save.
//
//   ModelWeights w = load_weights("runs/x/checkpoints", CkptFormat::hetu);
//   save_hf_weights("hf_out", w, {DType::bf16, 5'000'000'000});   // config.json + safetensors
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lib/core/tensor.h"
#include "lib/models/model_config.h"

namespace hetu::weights {

enum class CkptFormat { hetu, hf, llmc };
std::string_view to_string(CkptFormat format);

struct ModelWeights {
  ModelConfig model;
  std::map<std::string, Tensor> params;  // exactly expected_parameters(model), any float dtype
  int64_t step = 0;
  std::string job_toml;            // the job config stored with it; empty when unknown
  std::vector<std::string> notes;  // what loading dropped or assumed, for the user
};

struct SaveOptions {
  DType dtype = DType::f32;                  // f32 or bf16
  uint64_t max_shard_bytes = 5'000'000'000;  // hf only
};

// hetu's parameter names and shapes for a model config (as build_model registers them).
std::map<std::string, Shape> expected_parameters(const ModelConfig& model);
// Checks that `params` are exactly the expected names and shapes; UsageError naming `source`.
void check_parameters(const ModelWeights& weights, const std::string& source);

// The format of a checkpoint path: a hetu step/checkpoints/run folder or .h5 file, a HF
// folder (config.json + safetensors) or .safetensors file, or an llm.c .bin file.
CkptFormat detect_format(const std::string& path);
ModelWeights load_weights(const std::string& path, CkptFormat format);

// A hetu step folder, checkpoint.h5, checkpoints folder or run folder -> the step folder.
std::string resolve_hetu_checkpoint(const std::string& path);
ModelWeights load_hetu_weights(const std::string& path);
// OUT is a checkpoints folder (step folder + latest); it must be new or empty.
std::string save_hetu_weights(const std::string& out, const ModelWeights& weights, const SaveOptions& options);
// A job config (TOML) for a model that came without one: the embedded default job with this
// model, and a tokenizer guessed from the vocab (256: byte; GPT-2 >= 50257: gpt2; else none).
std::string synthesize_job_toml(const ModelConfig& model, const std::string& name);

ModelWeights load_hf_weights(const std::string& path);
std::vector<std::string> save_hf_weights(const std::string& out, const ModelWeights& weights,
                                         const SaveOptions& options);

ModelWeights load_llmc_weights(const std::string& path);
void save_llmc_weights(const std::string& out, const ModelWeights& weights, const SaveOptions& options);

// Makes `out` (a folder) ready for writing: created, or existing and empty; else UsageError.
void prepare_output_folder(const std::string& out);

}  // namespace hetu::weights
