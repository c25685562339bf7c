// LLaMA presets, with the published shapes (Hugging Face config.json of each model):
// tiny matches the llama_tiny.h5 fixture (tests/make_reference_fixtures.sh); 1b is Llama 3.2 1B (GQA 32/8, tied embeddings) and 8b Llama 3.1 8B
// (GQA 32/8, untied head), both vocab 128256, rope_theta 5e5, context 131072 by Llama 3's
// rope_scaling of an 8192-token original (factor 32 and 8); 7b and 13b are Llama 2 (MHA,
// vocab 32000, context 4096, untied head, rope_theta 1e4, no rope scaling).
#include "lib/models/model_config.h"

namespace hetu {
namespace {

ModelConfig llama(std::string flavor, int64_t layers, int64_t hidden, int64_t heads,
                  int64_t kv_heads, int64_t ffn_hidden, int64_t vocab, int64_t max_seq_len,
                  double rope_theta, double norm_eps, bool tie_embeddings, RopeScaling rope_scaling = {}) {
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
  m.rope_scaling = rope_scaling;
  return m;
}

// Llama 3.1 / 3.2 rope_scaling: rope_type llama3, low_freq_factor 1, high_freq_factor 4,
// original_max_position_embeddings 8192.
RopeScaling llama3_scaling(double factor) { return {RopeScalingType::llama3, factor, 1.0, 4.0, 8192}; }

}  // namespace

const std::vector<ModelConfig>& llama_flavors() {
  static const std::vector<ModelConfig> flavors = {
      //    flavor layers hidden heads kv  ffn    vocab   max_seq theta    eps   tied   rope_scaling
      llama("tiny", 2, 64, 4, 2, 176, 256, 64, 10000.0, 1e-5, false),
      llama("1b", 16, 2048, 32, 8, 8192, 128256, 131072, 500000.0, 1e-5, true, llama3_scaling(32.0)),
      llama("8b", 32, 4096, 32, 8, 14336, 128256, 131072, 500000.0, 1e-5, false, llama3_scaling(8.0)),
      llama("7b", 32, 4096, 32, 32, 11008, 32000, 4096, 10000.0, 1e-5, false),
      llama("13b", 40, 5120, 40, 40, 13824, 32000, 4096, 10000.0, 1e-5, false),
  };
  return flavors;
}

}  // namespace hetu
