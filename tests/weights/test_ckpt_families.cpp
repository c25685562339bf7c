// The model-family registry (lib/models/model_family.h), family by family: its name and HF
// model_type find it, every flavor loads from a job file, a built model's parameters go out
// under HF's names and shapes and come back bitwise, and the parameter count and the planner's cost
// facts (lib/plan/model_facts.h) agree with the parameters the built model registers.
#include <catch2/catch.hpp>
#include <cstring>

#include "lib/checkpoint/safetensors_index.h"
#include "lib/config/config.h"
#include "lib/models/model_family.h"
#include "lib/plan/model_facts.h"
#include "lib/util/build_info.h"
#include "lib/weights/model_weights.h"
#include "tests/temp_dir.h"

using namespace hetu;
using namespace hetu::weights;
using hetu::test::TempDir;

namespace {

// A few tensors of small_model() as transformers' GPT2LMHeadModel / LlamaForCausalLM name and
// shape them in state_dict() (by hand: GPT-2's Conv1D weights are (in, out), nn.Linear's
// (out, in)); a family added to the registry must add its own.
const std::map<std::string, std::map<std::string, Shape>> kHfTensors = {
    {"gpt2",
     {{"transformer.wte.weight", {250, 64}},
      {"transformer.wpe.weight", {32, 64}},
      {"transformer.h.0.attn.c_attn.weight", {64, 192}},
      {"transformer.h.0.mlp.c_fc.weight", {64, 96}},
      {"transformer.h.1.mlp.c_proj.bias", {64}},
      {"transformer.ln_f.bias", {64}}}},
    {"llama",
     {{"model.embed_tokens.weight", {250, 64}},
      {"model.layers.0.self_attn.q_proj.weight", {64, 64}},
      {"model.layers.0.self_attn.k_proj.weight", {32, 64}},
      {"model.layers.1.mlp.gate_proj.weight", {96, 64}},
      {"model.norm.weight", {64}},
      {"lm_head.weight", {250, 64}}}},
};

// The default job with its [model] table replaced by arch + flavor.
std::string job_with_flavor(std::string_view arch, const std::string& flavor) {
  std::string job(default_job_toml());
  const size_t model = job.find("[model]"), data = job.find("[data]");
  REQUIRE(model != std::string::npos);
  REQUIRE(data > model);
  return job.substr(0, model) + "[model]\narch = \"" + std::string(arch) + "\"\nflavor = \"" + flavor + "\"\n\n" +
         job.substr(data);
}

// A small explicit shape of the family (untied head where the family allows it).
ModelConfig small_model(const ModelFamily& family) {
  ModelConfig m = family.flavors().front();
  m.flavor = "";
  m.layers = 2;
  m.hidden = 64;
  m.heads = 4;
  m.kv_heads = family.grouped_kv_heads ? 2 : 4;
  m.ffn_hidden = 96;
  m.vocab = 250;  // padded to 256: the padding rows count in the built model, not in num_params
  m.max_seq_len = 32;
  m.tie_embeddings = family.always_ties_embeddings;
  return m;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.raw_data(), cb.raw_data(), static_cast<size_t>(a.numel()) * dtype_size(a.dtype())) == 0;
}

}  // namespace

TEST_CASE("families: each is found by its name and its HF model_type", "[families]") {
  REQUIRE(model_families().size() >= 2);
  for (const ModelFamily* family : model_families()) {
    INFO(family->name);
    CHECK(&model_family(family->arch) == family);
    CHECK(find_model_family(family->name) == family);
    CHECK(find_hf_model_family(family->hf.model_type) == family);
    CHECK(parse_arch(family->name) == family->arch);
    CHECK(to_string(family->arch) == family->name);
  }
  CHECK(find_model_family("bert") == nullptr);
  CHECK(find_hf_model_family("bert") == nullptr);
}

TEST_CASE("families: every flavor of every family loads from a job file", "[families]") {
  for (const ModelFamily* family : model_families()) {
    REQUIRE_FALSE(family->flavors().empty());
    for (const ModelConfig& flavor : family->flavors()) {
      INFO(family->name << " " << flavor.flavor);
      CHECK(flavor.arch == family->arch);
      CHECK(find_flavor(family->arch, flavor.flavor) == flavor);
      const config::LoadedConfig loaded =
          config::load_job_config_text(job_with_flavor(family->name, flavor.flavor), "job.toml", {"training.seq_len=16"});
      CHECK(loaded.config.model == flavor);
    }
  }
}

TEST_CASE("families: HF export names the tensors as transformers does and imports them back", "[families]") {
  for (const ModelFamily* family : model_families()) {
    INFO(family->name);
    REQUIRE(kHfTensors.count(std::string(family->name)));
    TempDir dir("families_hf_" + std::string(family->name));
    ModelWeights w;
    w.model = small_model(*family);
    for (const nn::NamedParameter& p : build_model(w.model, 5)->named_parameters()) w.params[p.name] = p.tensor;
    save_hf_weights(dir.file("hf"), w, {});

    const checkpoint::SafetensorsFolder st = checkpoint::read_safetensors_folder(dir.file("hf"));
    for (const auto& [expected, shape] : kHfTensors.at(std::string(family->name))) {
      INFO(expected);
      if (expected == "lm_head.weight" && w.model.tie_embeddings) continue;
      REQUIRE(st.tensors.count(expected));
      CHECK(st.tensors.at(expected).shape() == shape);
    }
    CHECK(st.tensors.size() == w.params.size());

    const ModelWeights back = load_weights(dir.file("hf"), CkptFormat::hf);
    CHECK(back.model.arch == family->arch);
    REQUIRE(back.params.size() == w.params.size());
    for (const auto& [name, t] : w.params) {
      INFO(name);
      REQUIRE(back.params.count(name));
      // The vocab's padding rows are not exported (they come back as zeros).
      const bool vocab_rows = t.dim() == 2 && t.size(0) == w.model.padded_vocab();
      const auto real = [&](const Tensor& x) { return vocab_rows ? x.narrow(0, 0, w.model.vocab) : x; };
      CHECK(same_bytes(real(back.params.at(name)), real(t)));
    }
  }
}

TEST_CASE("families: parameter count and cost facts agree with the built model", "[families]") {
  for (const ModelFamily* family : model_families()) {
    for (bool tied : {true, false}) {
      if (family->always_ties_embeddings && !tied) continue;
      ModelConfig m = small_model(*family);
      m.tie_embeddings = tied;
      INFO(family->name << (tied ? " tied" : " untied"));
      int64_t built = 0;  // every registered parameter, padded vocab rows included
      for (const nn::NamedParameter& p : build_model(m, 1)->named_parameters()) built += p.tensor.numel();
      const int64_t padding_rows = m.padded_vocab() - m.vocab;
      CHECK(m.num_params() + padding_rows * m.hidden * (tied ? 1 : 2) == built);

      const plan::ModelFacts f = plan::model_facts(m, m.max_seq_len, 4);
      const double from_facts = static_cast<double>(m.layers) * f.layer_params + f.first_params +
                                (f.head_shares_embedding ? 0.0 : f.last_params);
      CHECK(from_facts == static_cast<double>(built));
      CHECK(f.head_shares_embedding == tied);
    }
  }
}
