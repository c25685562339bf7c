// `hetu ckpt logits CKPT --tokens FILE --out FILE.safetensors`: run a checkpoint of any
// format `ckpt convert` reads on a batch of token ids (lib/inference/model_logits.h) and save
// "logits" (B, T, vocab) f32 and "tokens" (B, T) i32.
#include <fmt/core.h>

#include <cstdio>

#include "app/commands.h"
#include "lib/checkpoint/safetensors.h"
#include "lib/inference/model_logits.h"
#include "lib/ops/ops.h"
#include "lib/weights/model_weights.h"

namespace hetu::app {

int run_ckpt_logits(const CkptLogitsOptions& options) {
  ops::set_num_threads(options.threads);
  const weights::ModelWeights w = weights::load_weights(options.checkpoint, weights::detect_format(options.checkpoint));
  const Tensor tokens = inference::read_token_rows(options.tokens, w.model);
  const Tensor logits = inference::model_logits(w, tokens);
  checkpoint::write_safetensors(options.out, {{"logits", logits.to(DType::f32)}, {"tokens", tokens}}, {{"format", "pt"}});
  std::fputs(fmt::format("wrote {}: logits {}\n", options.out, shape_str(logits.shape())).c_str(), stdout);
  return 0;
}

}  // namespace hetu::app
