// Each model family's sharding plan (Megatron layout) and which pipeline parts hold which
// parameter, as data the runtime reads; defined per family in <arch>/<arch>_sharding.cpp.
//
// The Megatron layout over a tensor-parallel group of tp devices: attention q|k|v and MLP
// up projections column parallel (output features split, heads split across ranks, GQA kv
// heads too), attention output and MLP down projections row parallel (input features
// split), embedding and LM head vocab parallel (rows split; the loss is vocab-parallel
// cross-entropy), norms and row-parallel biases duplicated.
//
//   const ModelSharding& s = model_sharding(Arch::gpt2);
//   s.rule("h.0.mlp.c_fc.weight", {3072, 768}, 2)   // S(0)x2
//   s.holds(config, {.first_layer = 0, .last_layer = 5, .embed = true, .head = false}, "ln_f.weight")  // false
#pragma once

#include <functional>
#include <string>

#include "lib/models/language_model.h"
#include "lib/nn/tensor_parallel.h"

namespace hetu {

struct ModelSharding {
  nn::ShardingRule rule;
  // Whether a stage that builds `part` holds the parameter `name` (of the whole model).
  std::function<bool(const ModelConfig& config, const ModelPart& part, const std::string& name)> holds;
};

const ModelSharding& model_sharding(Arch arch);
const ModelSharding& gpt2_sharding();
const ModelSharding& llama_sharding();

bool ends_with(const std::string& s, const std::string& suffix);

// "h.12.attn.c_attn.weight" after "h." -> 12 (the layer index after `prefix`), or -1.
int64_t layer_of(const std::string& name, const std::string& prefix);

// Throws a UsageError unless a stage of `tp` devices can hold whole heads: tp must divide
// the attention heads and the kv heads.
void check_tensor_parallel(const ModelConfig& config, int64_t tp);

}  // namespace hetu
