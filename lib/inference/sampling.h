// Next-token sampling for `hetu generate`: softmax of logits / temperature over the top_k
// most likely ids, inverted at a uniform draw u.
//
//   int32_t id = sample_token(logits, vocab, /*temperature=*/0.8, /*top_k=*/40, rng.uniform(i));
#pragma once

#include <cstdint>

namespace hetu::inference {

// Index of the next token from logits[0..vocab): temperature <= 0 is greedy (the argmax);
// top_k 0 (or >= vocab) samples the whole vocabulary; u is in [0, 1).
int32_t sample_token(const float* logits, int64_t vocab, double temperature, int64_t top_k, double u);

}  // namespace hetu::inference
