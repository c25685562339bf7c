// GPT-2 presets. tiny matches the gpt2_tiny.h5 fixture (tests/make_reference_fixtures.sh); the others are OpenAI's
// published GPT-2 shapes (vocab 50257, context 1024, MLP 4x hidden, LayerNorm eps 1e-5).
#include "lib/models/model_config.h"

namespace hetu {
namespace {

ModelConfig gpt2(std::string flavor, int64_t layers, int64_t hidden, int64_t heads,
                 int64_t vocab, int64_t max_seq_len) {
  ModelConfig m;
  m.arch = Arch::gpt2;
  m.flavor = std::move(flavor);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = heads;
  m.ffn_hidden = 4 * hidden;
  m.vocab = vocab;
  m.max_seq_len = max_seq_len;
  m.norm_eps = 1e-5;
  m.tie_embeddings = true;
  return m;
}

}  // namespace

const std::vector<ModelConfig>& gpt2_flavors() {
  static const std::vector<ModelConfig> flavors = {
      //   flavor  layers hidden heads vocab  max_seq_len
      gpt2("tiny", 2, 64, 4, 256, 64),
      gpt2("124m", 12, 768, 12, 50257, 1024),
      gpt2("350m", 24, 1024, 16, 50257, 1024),
      gpt2("774m", 36, 1280, 20, 50257, 1024),
  };
  return flavors;
}

}  // namespace hetu
