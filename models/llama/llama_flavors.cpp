// LLaMA presets. tiny matches the llama_tiny.h5 fixture (tests/make_reference_fixtures.sh); 1b is Llama 3.2 1B
// (GQA 32/8, tied embeddings, rope_theta 5e5, vocab 128256); 7b and 13b are Llama 2
// (MHA, vocab 32000, context 4096, untied head, rope_theta 1e4).
#include "models/model_config.h"

namespace hetu {
namespace {

ModelConfig llama(std::string flavor, int64_t layers, int64_t hidden, int64_t heads,
                  int64_t kv_heads, int64_t ffn_hidden, int64_t vocab, int64_t max_seq_len,
                  double rope_theta, double norm_eps, bool tie_embeddings) {
  ModelConfig m;
  m.arch = Arch::llama;
  m.flavor = std::move(flavor);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.ffn_hidden = ffn_hidden;
  m.vocab = vocab;
  m.max_seq_len = max_seq_len;
  m.rope_theta = rope_theta;
  m.norm_eps = norm_eps;
  m.tie_embeddings = tie_embeddings;
  return m;
}

}  // namespace

const std::vector<ModelConfig>& llama_flavors() {
  static const std::vector<ModelConfig> flavors = {
      //    flavor layers hidden heads kv  ffn    vocab   max_seq theta    eps   tied
      llama("tiny", 2, 64, 4, 2, 176, 256, 64, 10000.0, 1e-5, false),
      llama("1b", 16, 2048, 32, 8, 8192, 128256, 131072, 500000.0, 1e-5, true),
      llama("7b", 32, 4096, 32, 32, 11008, 32000, 4096, 10000.0, 1e-5, false),
      llama("13b", 40, 5120, 40, 40, 13824, 32000, 4096, 10000.0, 1e-5, false),
  };
  return flavors;
}

}  // namespace hetu
