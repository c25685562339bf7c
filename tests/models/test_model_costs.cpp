// A model's cost facts (models/model_costs.h) against published numbers: GPT-2 124M has
// 7,087,872 parameters per layer (12 layers, 124,439,808 in all with its 50257 x 768 tied
// embedding and 1024 positions); LLaMA layers have no biases.
#include <catch2/catch.hpp>

#include "models/model_costs.h"

using namespace hetu;

TEST_CASE("model facts: GPT-2 124M per-layer parameters, FLOPs and ends", "[model_costs]") {
  const ModelConfig m = *find_flavor(Arch::gpt2, "124m");
  const plan::ModelFacts f = model_facts(m, 1024, 2);
  CHECK(f.layers == 12);
  CHECK(f.layer_params == 7087872);
  // Embeddings (50304 padded rows + 1024 positions) x 768 + ln_f.
  CHECK(f.first_params == Approx((50304.0 + 1024) * 768 + 2 * 768));
  CHECK(f.last_params == Approx(50304.0 * 768));
  CHECK(f.head_shares_embedding);
  CHECK(f.layer_forward_flops_per_token == Approx(2 * 7087872.0 + 4 * 768.0 * 1024));
  CHECK(f.hidden_bytes_per_token == 768 * 2);
}

TEST_CASE("model facts: an untied LLaMA's head is its own tensor", "[model_costs]") {
  ModelConfig m = *find_flavor(Arch::llama, "tiny");
  m.tie_embeddings = false;
  const plan::ModelFacts f = model_facts(m, 64, 4);
  const double C = static_cast<double>(m.hidden), kv = static_cast<double>(m.kv_heads * m.head_dim());
  CHECK(f.layer_params == Approx(2 * C + 2 * C * C + 2 * C * kv + 3 * C * static_cast<double>(m.ffn_hidden)));
  CHECK(f.first_params == Approx(static_cast<double>(m.padded_vocab()) * C + C));  // embedding + final norm
  CHECK_FALSE(f.head_shares_embedding);
}
