// LLaMA's rotary frequencies, computed once per model on the host and handed to the rotary
// op (CPU and CUDA kernels alike): inv_freq[i] = rope_theta^(-2i/D) for i < D/2, and with
// rope_scaling type llama3 (Llama 3.1 / 3.2; HF rope_type "llama3") the long wavelengths
// stretched by `factor`, with orig = original_max_position_embeddings:
//   wavelen = 2π / inv_freq
//   wavelen <  orig / high_freq_factor   high frequency: unchanged
//   wavelen >  orig / low_freq_factor    low frequency: inv_freq / factor
//   otherwise (medium)                   s = (orig / wavelen − low_freq_factor) / (high_freq_factor − low_freq_factor)
//                                        inv_freq = (1 − s) · inv_freq / factor + s · inv_freq
// (s runs from 0 at the low-frequency edge to 1 at the high-frequency edge, so the table is
// continuous.) Attention is not rescaled (llama3's attention factor is 1).
#pragma once

#include <vector>

#include "lib/models/model_config.h"

namespace hetu {

std::vector<double> llama_rope_frequencies(const ModelConfig& config);

}  // namespace hetu
