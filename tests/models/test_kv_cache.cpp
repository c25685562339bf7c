// Decoding with the KV cache gives the logits of running the whole sequence again, for
// GPT-2 and LLaMA (GQA), prompt first and then one token at a time.
#include <catch2/catch.hpp>

#include <cmath>

#include "lib/autograd/grad_mode.h"
#include "lib/models/language_model.h"

using namespace hetu;

TEST_CASE("cached decoding equals full recomputation", "[kv_cache]") {
  for (Arch arch : {Arch::gpt2, Arch::llama}) {
    INFO(to_string(arch));
    const std::unique_ptr<LanguageModel> model = build_model(*find_flavor(arch, "tiny"), 99);
    autograd::NoGradGuard no_grad;
    std::vector<int32_t> ids = {5, 17, 200, 3, 42};
    KVCache cache;
    Tensor logits = model->forward(tensor_from(ids, {1, 5}), &cache);
    for (int step = 0; step < 8; ++step) {
      const Tensor full = model->forward(tensor_from(ids, {1, static_cast<int64_t>(ids.size())}));
      const std::vector<double> expected = to_vector(full.select(1, full.size(1) - 1));
      const std::vector<double> got = to_vector(logits.select(1, logits.size(1) - 1));
      REQUIRE(got.size() == expected.size());
      double worst = 0;
      for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - expected[i]));
      CHECK(worst < 1e-5);
      const int32_t next = static_cast<int32_t>((step * 37 + 11) % 256);
      ids.push_back(next);
      logits = model->forward(tensor_from(std::vector<int32_t>{next}, {1, 1}), &cache);
    }
    CHECK(cache.length == static_cast<int64_t>(ids.size()));
  }
}
