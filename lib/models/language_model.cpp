// LanguageModel: composing the parts, the loss, FLOP estimate, and the factory.
#include "lib/models/language_model.h"

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "lib/autograd/functions.h"
#include "lib/autograd/recompute.h"
#include "lib/models/model_family.h"
#include "lib/nn/parallel_cross_entropy.h"
#include "lib/nn/tensor_parallel.h"

namespace hetu {

bool ModelPart::is_whole(const ModelConfig& config) const {
  return embed && head && first_layer == 0 && last(config) == config.layers - 1;
}

Tensor LanguageModel::stage_forward(const Tensor& input, std::span<const int64_t> cu_seqlens) const {
  Tensor x = part().embed ? embed(input, 0, cu_seqlens) : input;
  const autograd::Recompute mode = part().recompute;
  std::optional<autograd::SelectiveRecomputeGuard> selective;
  if (mode == autograd::Recompute::selective) selective.emplace();
  // The reruns come in backward, after cu_seqlens' owner may be gone: the blocks' closures
  // share one copy.
  std::shared_ptr<const std::vector<int64_t>> offsets;
  if (mode == autograd::Recompute::full) {
    offsets = std::make_shared<const std::vector<int64_t>>(cu_seqlens.begin(), cu_seqlens.end());
  }
  for (int64_t i = part().first_layer; i <= part().last(config_); ++i) {
    if (mode == autograd::Recompute::full) {
      x = autograd::recompute_full([this, i, offsets](const Tensor& in) { return block(i, in, nullptr, *offsets); }, x);
    } else {
      x = block(i, x, nullptr, cu_seqlens);
    }
  }
  return x;
}

Tensor LanguageModel::head(const Tensor& x) const {
  const Tensor n = head_input(x);
  return autograd::matmul(n, head_weight(n), false, true);
}

namespace {
// HETU_FUSED_LM_HEAD=0: the unfused reference LM head (logits, then the loss).
bool fused_lm_head() {
  const char* env = std::getenv("HETU_FUSED_LM_HEAD");
  return env == nullptr || std::string_view(env) != "0";
}
}  // namespace

Tensor LanguageModel::head_loss(const Tensor& hidden, const Tensor& targets, double normalizer) const {
  HT_CHECK(part().head, "head_loss: this model part (layers {}..{}) has no head", part().first_layer, part().last(config_));
  if (fused_lm_head()) {
    const Tensor n = head_input(hidden);
    return nn::parallel_linear_cross_entropy(autograd::reshape(n, {-1, n.size(-1)}), head_weight(n),
                                             targets.reshape({-1}), vocab_offset(), config_.vocab, tensor_parallel(),
                                             normalizer);
  }
  const Tensor logits = head(hidden);
  const int64_t local_vocab = logits.size(-1);
  return nn::parallel_cross_entropy(autograd::reshape(logits, {-1, local_vocab}), targets.reshape({-1}),
                                    vocab_offset(), config_.vocab, tensor_parallel(), normalizer);
}

Tensor LanguageModel::forward(const Tensor& ids, KVCache* cache) const {
  HT_CHECK(part().is_whole(config_) && (tensor_parallel() == nullptr || tensor_parallel()->size() == 1),
           "forward: needs the whole model on one device");
  const int64_t position_offset = cache != nullptr ? cache->length : 0;
  Tensor x = embed(ids, position_offset);
  for (int64_t i = 0; i < config_.layers; ++i) x = block(i, x, cache);
  if (cache != nullptr) cache->length += ids.size(1);
  const Tensor logits = head(x);
  const int64_t vocab = config_.vocab;
  return logits.size(-1) == vocab ? logits : autograd::narrow(logits, -1, 0, vocab);
}

Tensor LanguageModel::loss(const Tensor& ids, const Tensor& targets, double normalizer,
                           std::span<const int64_t> cu_seqlens) const {
  HT_CHECK(part().is_whole(config_), "loss: needs every part of the model (use stage_forward and head_loss)");
  return head_loss(stage_forward(ids, cu_seqlens), targets, normalizer);
}

double training_flops_per_token(const ModelConfig& m, int64_t seq_len) {
  // Every parameter of the padded model, tied embedding once; the token (and position)
  // embedding lookups cost no FLOPs, a tied LM head does.
  const int64_t padding = m.padded_vocab() - m.vocab;
  double params = static_cast<double>(m.num_params() + padding * m.hidden * (m.tie_embeddings ? 1 : 2));
  const int64_t lookup_rows = model_family(m.arch).position_rows(m);
  params -= static_cast<double>(lookup_rows * m.hidden);
  if (!m.tie_embeddings) params -= static_cast<double>(m.padded_vocab() * m.hidden);
  return 6.0 * params + 12.0 * static_cast<double>(m.layers * m.hidden * seq_len);
}

double LanguageModel::flops_per_token(int64_t seq_len) const { return training_flops_per_token(config_, seq_len); }

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

std::unique_ptr<LanguageModel> build_model(const ModelConfig& config, ModelBuild build) {
  HT_CHECK(build.part.first_layer >= 0 && build.part.first_layer <= build.part.last(config) &&
               build.part.last(config) < config.layers,
           "build_model: layers {}..{} of a {}-layer model", build.part.first_layer, build.part.last(config),
           config.layers);
  return model_family(config.arch).build(config, std::move(build));
}

std::unique_ptr<LanguageModel> build_model(const ModelConfig& config, uint64_t seed) {
  return build_model(config, ModelBuild{seed, ModelPart::whole(), nullptr});
}

}  // namespace hetu
