// LanguageModel: loss, FLOP estimate, and the factory over architectures.
#include "models/language_model.h"

#include <cmath>

#include "lib/autograd/functions.h"
#include "models/gpt2/gpt2_model.h"
#include "models/llama/llama_model.h"

namespace hetu {

Tensor LanguageModel::loss(const Tensor& ids, const Tensor& targets, double normalizer) const {
  const Tensor logits = forward(ids);
  const int64_t vocab = logits.size(-1);
  return autograd::cross_entropy(autograd::reshape(logits, {-1, vocab}), targets.reshape({-1}), -100, normalizer);
}

double LanguageModel::flops_per_token(int64_t seq_len) const {
  const ModelConfig& m = config_;
  // The token (and position) embedding lookups cost no FLOPs; a tied LM head does.
  double params = static_cast<double>(num_parameters());
  const int64_t lookup_rows = m.arch == Arch::gpt2 ? m.max_seq_len : 0;
  params -= static_cast<double>(lookup_rows * m.hidden);
  if (!m.tie_embeddings) params -= static_cast<double>(m.padded_vocab() * m.hidden);
  return 6.0 * params + 12.0 * static_cast<double>(m.layers * m.hidden * seq_len);
}

double residual_init_std(const ModelConfig& config) {
  return 0.02 / std::sqrt(2.0 * static_cast<double>(config.layers));
}

void append_to_cache(KVCache& cache, size_t layer, Tensor& k, Tensor& v) {
  if (cache.k.size() <= layer) {
    cache.k.resize(layer + 1);
    cache.v.resize(layer + 1);
  }
  if (cache.k[layer].defined()) {
    k = ops::concat({cache.k[layer], k}, 2);
    v = ops::concat({cache.v[layer], v}, 2);
  } else {
    k = k.contiguous();
    v = v.contiguous();
  }
  cache.k[layer] = k;
  cache.v[layer] = v;
}

std::unique_ptr<LanguageModel> build_model(const ModelConfig& config, uint64_t seed) {
  switch (config.arch) {
    case Arch::gpt2: return std::make_unique<Gpt2Model>(config, seed);
    case Arch::llama: return std::make_unique<LlamaModel>(config, seed);
  }
  HT_THROW("build_model: unknown architecture");
}

}  // namespace hetu
