// Cost facts of a model from its config.
#include "lib/plan/model_facts.h"

#include "lib/models/model_family.h"

namespace hetu::plan {

ModelFacts model_facts(const ModelConfig& config, int64_t seq_len, double activation_bytes) {
  ModelConfig no_layers = config;
  no_layers.layers = 0;
  const double C = static_cast<double>(config.hidden);
  const double vocab = static_cast<double>(config.vocab), padded = static_cast<double>(config.padded_vocab());
  const double outside = static_cast<double>(no_layers.num_params());  // embeddings, final norm, untied head
  plan::ModelFacts f;
  f.layers = config.layers;
  f.layer_params = config.layers > 0
                       ? static_cast<double>(config.num_params() - no_layers.num_params()) / static_cast<double>(config.layers)
                       : 0.0;
  // The first stage holds the (padded) embeddings and the small tensors outside the layers;
  // the last stage holds an LM head of padded_vocab x hidden (its own copy when tied).
  f.first_params = outside - (config.tie_embeddings ? 0.0 : vocab * C) + (padded - vocab) * C;
  f.last_params = padded * C;
  f.head_shares_embedding = config.tie_embeddings;
  // Matmuls: 2 FLOPs per weight per token; attention scores and their weighted sum: 2 x 2 x T x C.
  f.layer_attention_flops_per_token = 4 * C * static_cast<double>(seq_len);
  f.layer_forward_flops_per_token = 2 * f.layer_params + f.layer_attention_flops_per_token;
  f.head_forward_flops_per_token = 2 * padded * C;
  // The training tape, counted from the family's forward (ModelFamily::activations), and the
  // LM head every family shares (LanguageModel::head_loss, fused): the final norm keeps its
  // input and two statistics, the fused head its hidden gradient (C per token) and its weight
  // gradient (padded vocabulary x C) until the backward.
  const ActivationCount tape = model_family(config.arch).activations(config);
  f.layer_activation_bytes_per_token = tape.layer.sharded * activation_bytes;
  f.layer_replicated_activation_bytes_per_token = tape.layer.replicated * activation_bytes;
  f.workspace_bytes_per_token = tape.workspace.sharded * activation_bytes;
  f.replicated_workspace_bytes_per_token = tape.workspace.replicated * activation_bytes;
  f.head_activation_bytes_per_token = (2 * C + 2) * activation_bytes;
  f.head_weight_grad_bytes = padded * C * activation_bytes;
  f.hidden_bytes_per_token = C * activation_bytes;
  return f;
}

}  // namespace hetu::plan
