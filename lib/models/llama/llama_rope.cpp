// LLaMA rotary frequencies with Llama 3's scaling (see llama_rope.h).
#include "lib/models/llama/llama_rope.h"

#include <numbers>

#include "lib/ops/ops.h"
#include "lib/util/error.h"

namespace hetu {

std::vector<double> llama_rope_frequencies(const ModelConfig& c) {
  std::vector<double> inv_freq = ops::rotary_frequencies(c.head_dim(), c.rope_theta);
  const RopeScaling& s = c.rope_scaling;
  switch (s.type) {
    case RopeScalingType::none: return inv_freq;
    case RopeScalingType::llama3: break;
  }
  HT_CHECK(s.factor > 0 && s.low_freq_factor > 0 && s.high_freq_factor > s.low_freq_factor &&
               s.original_max_position_embeddings > 0,
           "rope_scaling llama3: factor {}, low_freq_factor {}, high_freq_factor {}, original_max_position_embeddings {} "
           "(the job file's validation should have refused these)",
           s.factor, s.low_freq_factor, s.high_freq_factor, s.original_max_position_embeddings);
  const double orig = static_cast<double>(s.original_max_position_embeddings);
  const double low_freq_wavelen = orig / s.low_freq_factor;
  const double high_freq_wavelen = orig / s.high_freq_factor;
  for (double& f : inv_freq) {
    const double wavelen = 2 * std::numbers::pi / f;
    if (wavelen < high_freq_wavelen) continue;
    if (wavelen > low_freq_wavelen) {
      f /= s.factor;
      continue;
    }
    const double smooth = (orig / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
    f = (1 - smooth) * f / s.factor + smooth * f;
  }
  return inv_freq;
}

}  // namespace hetu
