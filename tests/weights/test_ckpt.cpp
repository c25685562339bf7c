// hetu ckpt internals (lib/weights/model_weights.h): the parameter catalogue equals what build_model
// registers; synthesized job configs load back to the same model; HF GPT-2 files in the
// hub's older spelling (no "transformer.", Conv1D (in, out) weights, attention-mask buffers,
// a stored tied head) import; config.json settings hetu cannot honour, and keys no reader asked
// about, are refused by name; transformers 5's rope_parameters import.
// The numeric round trips against PyTorch and llm.c are in tests/e2e/ckpt_convert.sh.
#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>

#include "lib/checkpoint/safetensors.h"
#include "lib/config/config.h"
#include "lib/models/language_model.h"
#include "lib/util/error.h"
#include "lib/weights/model_weights.h"
#include "tests/temp_dir.h"

using namespace hetu;
using namespace hetu::weights;
using hetu::test::TempDir;

namespace {

ModelConfig flavor(Arch arch, const char* name) { return find_flavor(arch, name).value(); }

bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.raw_data(), cb.raw_data(), static_cast<size_t>(a.numel()) * dtype_size(a.dtype())) == 0;
}

const char* kGpt2Config = R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 64, "n_head": 4, "vocab_size": 256,
                              "n_positions": 64, "n_inner": null, "activation_function": "gelu_new"})";

// The tiny GPT-2 as the hub's gpt2 stores it: no prefix, Conv1D weights (in, out), mask buffers, lm_head.
std::vector<std::pair<std::string, Tensor>> hub_style_gpt2(const LanguageModel& model) {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const nn::NamedParameter& p : model.named_parameters()) {
    const bool conv1d = p.tensor.dim() == 2 && p.name.rfind("h.", 0) == 0;
    out.emplace_back(p.name, conv1d ? p.tensor.transpose(0, 1).contiguous() : p.tensor);
    if (p.name.ends_with("attn.c_attn.bias")) {
      out.emplace_back(p.name.substr(0, p.name.size() - 11) + "bias", ones({1, 1, 64, 64}));  // h.N.attn.bias
    }
  }
  out.emplace_back("lm_head.weight", model.parameter("wte.weight"));
  return out;
}

std::string load_error(const std::string& path) {
  try {
    load_weights(path, CkptFormat::hf);
  } catch (const UsageError& e) {
    return e.message();
  }
  return "";
}

}  // namespace

TEST_CASE("ckpt: the parameter catalogue is what build_model registers", "[ckpt]") {
  ModelConfig padded = flavor(Arch::gpt2, "tiny");
  padded.vocab = 300;
  ModelConfig tied = flavor(Arch::llama, "tiny");
  tied.tie_embeddings = true;
  for (const ModelConfig& m : {flavor(Arch::gpt2, "tiny"), padded, flavor(Arch::llama, "tiny"), tied}) {
    std::map<std::string, Shape> built;
    for (const nn::NamedParameter& p : build_model(m, 1)->named_parameters()) built[p.name] = p.tensor.shape();
    CHECK(expected_parameters(m) == built);
  }
}

TEST_CASE("ckpt: synthesized job configs load back to the same model", "[ckpt]") {
  ModelConfig llama = flavor(Arch::llama, "tiny");
  llama.flavor = "";
  llama.vocab = 32000;
  llama.rope_theta = 500000;
  const config::JobConfig back = config::load_job_config_text(synthesize_job_toml(llama, "x"), "x", {}).config;
  CHECK(back.model == llama);
  CHECK(back.data.tokenizer == config::Tokenizer::none);
  ModelConfig gpt2 = flavor(Arch::gpt2, "124m");
  gpt2.flavor = "";
  CHECK(config::load_job_config_text(synthesize_job_toml(gpt2, "y"), "y", {}).config.data.tokenizer ==
        config::Tokenizer::gpt2);
  ModelConfig bytes = flavor(Arch::gpt2, "tiny");
  bytes.flavor = "";
  const config::JobConfig b = config::load_job_config_text(synthesize_job_toml(bytes, "z"), "z", {}).config;
  CHECK(b.data.tokenizer == config::Tokenizer::byte);
  CHECK(b.training.seq_len <= bytes.max_seq_len);
}

TEST_CASE("ckpt: HF GPT-2 files in the hub's spelling import", "[ckpt]") {
  TempDir dir("ckpt_hub_gpt2");
  const auto model = build_model(flavor(Arch::gpt2, "tiny"), 7);
  checkpoint::write_safetensors(dir.file("model.safetensors"), hub_style_gpt2(*model), {{"format", "pt"}});
  dir.write("config.json", kGpt2Config);
  const ModelWeights w = load_weights(dir.file(), CkptFormat::hf);
  CHECK(w.model.layers == 2);
  CHECK(w.job_toml.empty());
  for (const nn::NamedParameter& p : model->named_parameters()) CHECK(same_bytes(w.params.at(p.name), p.tensor));
  CHECK(w.notes.size() == 2);  // the tied head and the 2 mask buffers

  // A head that differs from wte cannot be tied.
  auto tensors = hub_style_gpt2(*model);
  tensors.back().second = zeros({256, 64});
  checkpoint::write_safetensors(dir.file("model.safetensors"), tensors, {{"format", "pt"}});
  CHECK_THAT(load_error(dir.file()), Catch::Contains("lm_head.weight differs from wte.weight"));
}

TEST_CASE("ckpt: config.json settings hetu cannot honour are refused", "[ckpt]") {
  TempDir dir("ckpt_bad_config");
  const auto model = build_model(flavor(Arch::gpt2, "tiny"), 7);
  checkpoint::write_safetensors(dir.file("model.safetensors"), hub_style_gpt2(*model), {{"format", "pt"}});
  auto with_config = [&](const std::string& text) {
    dir.write("config.json", text);
    return load_error(dir.file());
  };
  CHECK(with_config(kGpt2Config).empty());
  CHECK_THAT(with_config(R"({"model_type": "mistral"})"),
             Catch::Contains("model_type \"mistral\" is not one hetu converts"));
  CHECK_THAT(with_config(R"({"model_type": "gpt2", "n_embd": 64})"), Catch::Contains("\"n_layer\" is missing"));
  CHECK_THAT(with_config(R"({"model_type": "gpt2", "n_layer": 2.5})"),
             Catch::Contains("n_layer: expected a positive integer"));
  CHECK_THAT(with_config(R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 64, "n_head": 4, "vocab_size": 256,
                             "n_positions": 64, "activation_function": "relu"})"),
             Catch::Contains("activation_function"));
  CHECK_THAT(with_config(R"({"model_type": "gpt2", "n_layer": 3, "n_embd": 64, "n_head": 4, "vocab_size": 256,
                             "n_positions": 64})"),
             Catch::Contains("tensor h.2.ln_1.weight (64,) is missing"));
  CHECK_THAT(with_config(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                             "intermediate_size": 176, "vocab_size": 256, "max_position_embeddings": 64,
                             "rope_scaling": {"rope_type": "yarn", "factor": 8.0}})"),
             Catch::Contains("rope_scaling: rope_type \"yarn\" is not implemented by hetu"));
  CHECK_THAT(with_config(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                             "intermediate_size": 176, "vocab_size": 256, "max_position_embeddings": 64,
                             "rope_scaling": {"rope_type": "llama3", "factor": 8.0}})"),
             Catch::Contains("the required key \"rope_scaling.low_freq_factor\" is missing"));
  CHECK_THAT(with_config(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                             "intermediate_size": 176, "vocab_size": 256, "max_position_embeddings": 64,
                             "rope_scaling": {"factor": 8.0}})"),
             Catch::Contains("rope_scaling: rope_type \"\" is not implemented"));
  CHECK_THAT(with_config(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                             "intermediate_size": 176, "vocab_size": 256, "max_position_embeddings": 64, "head_dim": 32})"),
             Catch::Contains("head_dim = 32"));
  CHECK_THAT(with_config("{"), Catch::Contains("config.json: not valid JSON"));
}

TEST_CASE("ckpt: config.json keys no reader asked about are refused by name", "[ckpt]") {
  TempDir dir("ckpt_unread_keys");
  const auto model = build_model(flavor(Arch::gpt2, "tiny"), 7);
  checkpoint::write_safetensors(dir.file("model.safetensors"), hub_style_gpt2(*model), {{"format", "pt"}});
  auto with_config = [&](const std::string& text) {
    dir.write("config.json", text);
    return load_error(dir.file());
  };
  const std::string gpt2 = R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 64, "n_head": 4, "vocab_size": 256,
                               "n_positions": 64, )";
  // What transformers 5 writes for a GPT2LMHeadModel: metadata, dropout, the summary heads.
  CHECK(with_config(gpt2 + R"("architectures": ["GPT2LMHeadModel"], "dtype": "float32", "transformers_version": "5.25.0",
                              "attn_pdrop": 0.1, "embd_pdrop": 0.1, "resid_pdrop": 0.1, "bos_token_id": 50256,
                              "summary_type": "cls_index", "summary_use_proj": true, "pad_token_id": null,
                              "add_cross_attention": false, "reorder_and_upcast_attn": false, "use_cache": true})")
            .empty());
  CHECK_THAT(with_config(gpt2 + R"("n_embd_extra": 3})"),
             Catch::Contains("config.json: n_embd_extra = 3: hetu's importer does not know this config.json key"));
  CHECK_THAT(with_config(gpt2 + R"("add_cross_attention": true})"), Catch::Contains("add_cross_attention = true"));
  // A LLaMA key of another family (Mistral's sliding window) is not silently dropped.
  const std::string llama = R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                                "intermediate_size": 176, "vocab_size": 256, "max_position_embeddings": 64, )";
  CHECK_THAT(with_config(llama + R"("sliding_window": 16})"), Catch::Contains("config.json: sliding_window = 16"));
  CHECK_THAT(with_config(llama + R"("rope_parameters": {"rope_type": "llama3", "rope_theta": 500.0, "factor": 8.0,
                                    "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                    "original_max_position_embeddings": 32, "beta_fast": 32}})"),
             Catch::Contains("rope_parameters.beta_fast = 32"));
  CHECK_THAT(with_config(llama + R"("rope_parameters": {"rope_type": "default", "rope_theta": 500.0},
                                    "rope_theta": 500.0})"),
             Catch::Contains("rope_parameters next to rope_theta or rope_scaling"));
  CHECK_THAT(with_config(llama + R"("rope_parameters": {"rope_type": "yarn", "factor": 4.0}})"),
             Catch::Contains("rope_parameters: rope_type \"yarn\" is not implemented by hetu"));
}

TEST_CASE("ckpt: transformers 5's rope_parameters import", "[ckpt]") {
  TempDir dir("ckpt_rope_parameters");
  ModelWeights w;
  w.model = flavor(Arch::llama, "tiny");
  for (const nn::NamedParameter& p : build_model(w.model, 3)->named_parameters()) w.params[p.name] = p.tensor;
  save_hf_weights(dir.file("hf"), w, {});
  auto import_with = [&](const std::string& rope) {
    std::ofstream(dir.file("hf/config.json"))
        << R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
               "num_key_value_heads": 2, "intermediate_size": 176, "vocab_size": 256, "max_position_embeddings": 64,
               "rope_parameters": )"
        << rope << "}";
    return load_weights(dir.file("hf"), CkptFormat::hf).model;
  };
  const ModelConfig plain = import_with(R"({"rope_type": "default", "rope_theta": 500.0})");
  CHECK(plain.rope_theta == 500.0);
  CHECK(plain.rope_scaling.type == RopeScalingType::none);
  const ModelConfig scaled = import_with(R"({"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0,
                                             "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                             "original_max_position_embeddings": 8192})");
  CHECK(scaled.rope_theta == 500000.0);
  CHECK(scaled.rope_scaling == RopeScaling{RopeScalingType::llama3, 32.0, 1.0, 4.0, 8192});
}

TEST_CASE("ckpt: HF LLaMA 3 rope_scaling imports and exports", "[ckpt]") {
  TempDir dir("ckpt_llama3");
  ModelWeights w;
  w.model = flavor(Arch::llama, "tiny");
  w.model.rope_scaling = {RopeScalingType::llama3, 8.0, 1.0, 4.0, 32};
  for (const nn::NamedParameter& p : build_model(w.model, 3)->named_parameters()) w.params[p.name] = p.tensor;
  save_hf_weights(dir.file("hf"), w, {});
  std::ifstream in(dir.file("hf/config.json"));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const char* key : {"\"rope_type\": \"llama3\"", "\"factor\": 8.0", "\"low_freq_factor\": 1.0",
                          "\"high_freq_factor\": 4.0", "\"original_max_position_embeddings\": 32"}) {
    CHECK_THAT(text, Catch::Contains(key));
  }
  CHECK(load_weights(dir.file("hf"), CkptFormat::hf).model.rope_scaling == w.model.rope_scaling);

  // The rope_scaling of meta-llama/Llama-3.2-1B's config.json (tiny shapes around it), and
  // the older spelling "type" of transformers before 4.43.
  auto import_with = [&](const std::string& rope_scaling) {
    std::ofstream(dir.file("hf/config.json"))
        << R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
               "num_key_value_heads": 2, "intermediate_size": 176, "vocab_size": 256, "max_position_embeddings": 64,
               "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "rope_scaling": )"
        << rope_scaling << "}";
    return load_weights(dir.file("hf"), CkptFormat::hf).model.rope_scaling;
  };
  CHECK(import_with(R"({"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                        "original_max_position_embeddings": 8192, "rope_type": "llama3"})") ==
        RopeScaling{RopeScalingType::llama3, 32.0, 1.0, 4.0, 8192});
  CHECK(import_with(R"({"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                        "original_max_position_embeddings": 8192, "type": "llama3"})") ==
        RopeScaling{RopeScalingType::llama3, 8.0, 1.0, 4.0, 8192});
  CHECK(import_with("null").type == RopeScalingType::none);
  // A synthesized job carries it.
  ModelConfig scaled = w.model;
  scaled.flavor = "";
  CHECK(config::load_job_config_text(synthesize_job_toml(scaled, "x"), "x", {}).config.model == scaled);
}

TEST_CASE("ckpt: the HF export carries the config.json fields transformers reads", "[ckpt]") {
  TempDir dir("ckpt_export");
  ModelWeights w;
  w.model = flavor(Arch::llama, "tiny");
  for (const nn::NamedParameter& p : build_model(w.model, 3)->named_parameters()) w.params[p.name] = p.tensor;
  save_hf_weights(dir.file("hf"), w, {DType::bf16, 1000000});
  std::ifstream in(dir.file("hf/config.json"));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const char* key : {"\"model_type\": \"llama\"", "\"num_key_value_heads\": 2", "\"intermediate_size\": 176",
                          "\"rms_norm_eps\": 1e-05", "\"rope_theta\": 10000.0", "\"tie_word_embeddings\": false",
                          "\"torch_dtype\": \"bfloat16\"", "\"LlamaForCausalLM\""}) {
    CHECK_THAT(text, Catch::Contains(key));
  }
  const checkpoint::SafetensorsReader st(dir.file("hf/model.safetensors"));
  CHECK(st.header().metadata.at("format") == "pt");
  CHECK(st.header().find("lm_head.weight")->dtype == DType::bf16);
  CHECK_THROWS_WITH(save_hf_weights(dir.file("hf"), w, {}), Catch::Contains("exists and is not empty"));
}
