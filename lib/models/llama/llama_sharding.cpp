// LLaMA's sharding plan (see model_sharding.h): q/k/v/gate/up column parallel, o/down row
// parallel, embed_tokens and lm_head vocab parallel, RMSNorm weights duplicated.
#include "lib/models/llama/llama_model.h"
#include "lib/models/model_sharding.h"

namespace hetu {
namespace {

std::optional<nn::ShardingChoice> llama_rule(const std::string& name, const Shape&, int64_t tp) {
  if (name == "model.embed_tokens.weight" || name == "lm_head.weight") {
    return nn::ShardingChoice{{}, DistState::split(0, tp)};
  }
  for (const char* column : {".q_proj.weight", ".k_proj.weight", ".v_proj.weight", ".gate_proj.weight", ".up_proj.weight"}) {
    if (ends_with(name, column)) return nn::ShardingChoice{{}, DistState::split(0, tp)};
  }
  if (ends_with(name, ".o_proj.weight") || ends_with(name, ".down_proj.weight")) {
    return nn::ShardingChoice{{}, DistState::split(1, tp)};
  }
  return std::nullopt;  // norms
}

bool llama_holds(const ModelConfig& config, const ModelPart& part, const std::string& name) {
  const int64_t layer = layer_of(name, "model.layers.");
  if (layer >= 0) return part.has_layer(config, layer);
  if (name.rfind("model.embed_tokens.", 0) == 0) return part.embed || (part.head && config.tie_embeddings);
  return part.head;  // model.norm, lm_head
}

}  // namespace

const ModelSharding& llama_sharding() {
  static const ModelSharding sharding{[](const std::string& name, const Shape& shape, int64_t tp) {
                                        return llama_rule(name, shape, tp);
                                      },
                                      llama_holds};
  return sharding;
}

}  // namespace hetu
