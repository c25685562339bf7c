// GPT-2's sharding plan (see model_sharding.h). c_attn's rows are q | k | v, each C rows in
// head order, so its weight is viewed as (3, C, C) and its bias as (3, C), split on dim 1:
// every rank holds the q, k and v rows of the same heads.
#include "lib/models/gpt2/gpt2_model.h"
#include "lib/models/model_sharding.h"

namespace hetu {
namespace {

std::optional<nn::ShardingChoice> gpt2_rule(const std::string& name, const Shape& shape, int64_t tp) {
  if (name == "wte.weight") return nn::ShardingChoice{{}, DistState::split(0, tp)};
  if (ends_with(name, ".attn.c_attn.weight") || ends_with(name, ".attn.c_attn.bias")) {
    const int64_t hidden = shape[0] / 3;
    Shape view = {3, hidden};
    if (shape.size() == 2) view.push_back(shape[1]);
    return nn::ShardingChoice{view, DistState::split(1, tp)};
  }
  if (ends_with(name, ".attn.c_proj.weight") || ends_with(name, ".mlp.c_proj.weight")) {
    return nn::ShardingChoice{{}, DistState::split(1, tp)};
  }
  if (ends_with(name, ".mlp.c_fc.weight") || ends_with(name, ".mlp.c_fc.bias")) {
    return nn::ShardingChoice{{}, DistState::split(0, tp)};
  }
  return std::nullopt;  // wpe, norms, row-parallel biases: duplicated
}

bool gpt2_holds(const ModelConfig& config, const ModelPart& part, const std::string& name) {
  const int64_t layer = layer_of(name, "h.");
  if (layer >= 0) return part.has_layer(config, layer);
  if (name.rfind("wte.", 0) == 0) return part.embed || part.head;  // tied LM head
  if (name.rfind("wpe.", 0) == 0) return part.embed;
  return part.head;  // ln_f
}

}  // namespace

const ModelSharding& gpt2_sharding() {
  static const ModelSharding sharding{[](const std::string& name, const Shape& shape, int64_t tp) {
                                        return gpt2_rule(name, shape, tp);
                                      },
                                      gpt2_holds};
  return sharding;
}

}  // namespace hetu
