// A model's cost facts for the planner (lib/plan/stage_estimate.h): parameters per layer and
// on the ends, forward FLOPs per token, activation bytes kept for the backward. Derived from
// the ModelConfig's own parameter count (ModelConfig::num_params), so every family that counts
// its parameters gets them; the activation bytes from the family's count of its training tape
// (ModelFamily::activations).
//
//   plan::ModelFacts f = model_facts(config, /*seq_len=*/1024, /*activation_bytes=*/2);
//   f.layer_params;   // 7.08M for GPT-2 124M
#pragma once

#include <cstdint>

#include "lib/models/model_config.h"
#include "lib/plan/stage_estimate.h"

namespace hetu::plan {

// `activation_bytes`: bytes per element of the compute dtype (4 for fp32, 2 for bf16).
ModelFacts model_facts(const ModelConfig& config, int64_t seq_len, double activation_bytes);

}  // namespace hetu::plan
