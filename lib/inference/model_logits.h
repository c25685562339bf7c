// A model's logits over rows of token ids, from weights in any format `hetu ckpt convert`
// reads (lib/weights/model_weights.h): what `hetu ckpt logits` saves so that other
// implementations (tests/python/hf_logits.py, PyTorch on a HF export) can be compared with
// hetu's forward on the same weights. A tokens file has one sequence per line, ids separated
// by whitespace, every line the same length.
//
//   const Tensor tokens = read_token_rows("tokens.txt", w.model);   // (B, T) i32
//   const Tensor logits = model_logits(w, tokens);                   // (B, T, vocab)
#pragma once

#include <string>

#include "lib/core/tensor.h"
#include "lib/models/model_config.h"
#include "lib/weights/model_weights.h"

namespace hetu::inference {

// (B, T) i32 from the tokens file; UsageError naming the file and line unless every id is in
// [0, vocab), every line the same length and that length in [1, max_seq_len].
Tensor read_token_rows(const std::string& path, const ModelConfig& m);

// The model of `w` with its parameters, run forward on `tokens` without gradients.
Tensor model_logits(const weights::ModelWeights& w, const Tensor& tokens);

}  // namespace hetu::inference
