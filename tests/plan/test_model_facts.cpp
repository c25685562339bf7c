// A model's cost facts (lib/plan/model_facts.h) against published numbers: GPT-2 124M has
// 7,087,872 parameters per layer (12 layers, 124,439,808 in all with its 50257 x 768 tied
// embedding and 1024 positions); LLaMA layers have no biases.
#include <catch2/catch.hpp>

#include "lib/autograd/functions.h"
#include "lib/core/storage.h"
#include "lib/models/language_model.h"
#include "lib/models/model_family.h"
#include "lib/plan/model_facts.h"

using namespace hetu;

TEST_CASE("model facts: GPT-2 124M per-layer parameters, FLOPs and ends", "[model_facts]") {
  const ModelConfig m = *find_flavor(Arch::gpt2, "124m");
  const plan::ModelFacts f = plan::model_facts(m, 1024, 2);
  CHECK(f.layers == 12);
  CHECK(f.layer_params == 7087872);
  // Embeddings (50304 padded rows + 1024 positions) x 768 + ln_f.
  CHECK(f.first_params == Approx((50304.0 + 1024) * 768 + 2 * 768));
  CHECK(f.last_params == Approx(50304.0 * 768));
  CHECK(f.head_shares_embedding);
  CHECK(f.layer_forward_flops_per_token == Approx(2 * 7087872.0 + 4 * 768.0 * 1024));
  CHECK(f.hidden_bytes_per_token == 768 * 2);
}

TEST_CASE("model facts: an untied LLaMA's head is its own tensor", "[model_facts]") {
  ModelConfig m = *find_flavor(Arch::llama, "tiny");
  m.tie_embeddings = false;
  const plan::ModelFacts f = plan::model_facts(m, 64, 4);
  const double C = static_cast<double>(m.hidden), kv = static_cast<double>(m.kv_heads * m.head_dim());
  CHECK(f.layer_params == Approx(2 * C + 2 * C * C + 2 * C * kv + 3 * C * static_cast<double>(m.ffn_hidden)));
  CHECK(f.first_params == Approx(static_cast<double>(m.padded_vocab()) * C + C));  // embedding + final norm
  CHECK_FALSE(f.head_shares_embedding);
}

// The training tape the family counts (ModelFamily::activations, Note [Activation count])
// against what the CPU allocator holds after a forward with the tape: every layer's kept
// tensors, the final norm's input and the fused head's gradients (model_facts). And the
// backward's peak beyond that and the gradients against the counted workspace.
TEST_CASE("model facts: the counted training tape is what the allocator holds", "[model_facts]") {
  for (const Arch arch : {Arch::gpt2, Arch::llama}) {
    ModelConfig m = *find_flavor(arch, "tiny");
    m.layers = 3;
    const int64_t B = 2, T = m.max_seq_len, tokens = B * T;
    INFO(model_family(arch).name << ", hidden " << m.hidden << ", ffn " << m.ffn_hidden << ", " << tokens << " tokens");
    const plan::ModelFacts f = plan::model_facts(m, T, 4);
    const std::unique_ptr<LanguageModel> model = build_model(m, 5);
    std::vector<int64_t> t(static_cast<size_t>(tokens));
    for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<int64_t>((i * 7) % 200);
    const Tensor ids = tensor_from(t, {B, T});
    const size_t before = cpu_memory_usage().in_use;
    Tensor loss = model->loss(ids, ids);
    const double kept = static_cast<double>(cpu_memory_usage().in_use - before);
    const double counted = static_cast<double>(tokens) * (static_cast<double>(m.layers) *
                               (f.layer_activation_bytes_per_token + f.layer_replicated_activation_bytes_per_token) +
                           f.head_activation_bytes_per_token) + f.head_weight_grad_bytes;
    INFO("kept after the forward " << kept << " B, counted " << counted << " B");
    CHECK(kept == Approx(counted).epsilon(0.01));
    reset_cpu_peak_memory();
    autograd::backward(loss);
    double grads = 0;
    for (const nn::NamedParameter& p : model->named_parameters()) grads += 4.0 * static_cast<double>(p.tensor.numel());
    const double backward_peak = static_cast<double>(cpu_memory_usage().peak - before);
    const double workspace = static_cast<double>(tokens) * (f.workspace_bytes_per_token + f.replicated_workspace_bytes_per_token);
    INFO("backward peak " << backward_peak << " B, gradients " << grads << " B, counted workspace " << workspace << " B");
    CHECK(backward_peak <= kept + grads + 1.1 * workspace);
  }
}
