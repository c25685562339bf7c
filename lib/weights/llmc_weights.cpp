// llm.c GPT-2 files (lib/checkpoint/llmc_checkpoint.h) as a `hetu ckpt` format. llm.c's GPT-2 is
// hetu's: same tensor layouts ((out, in), q|k|v rows), tied head, GELU (tanh), LayerNorm eps
// 1e-5, MLP 4x hidden. Its padded vocab Vp becomes hetu's padded vocab (vocab_multiple 128
// when that gives Vp, else Vp itself), so every row, padding included, round-trips.
#include <fmt/core.h>

#include "lib/checkpoint/llmc_checkpoint.h"
#include "lib/util/error.h"
#include "lib/weights/model_weights.h"

namespace hetu::weights {

ModelWeights load_llmc_weights(const std::string& path) {
  checkpoint::LlmcCheckpoint file = checkpoint::read_llmc_checkpoint(path);
  const checkpoint::LlmcHeader& h = file.header;
  ModelWeights w;
  ModelConfig& m = w.model;
  m.arch = Arch::gpt2;
  m.layers = h.layers;
  m.hidden = h.channels;
  m.heads = m.kv_heads = h.heads;
  m.ffn_hidden = 4 * h.channels;
  m.vocab = h.vocab;
  m.max_seq_len = h.max_seq_len;
  m.norm_eps = 1e-5;
  m.tie_embeddings = true;
  m.vocab_multiple = 128;
  if (m.padded_vocab() != h.padded_vocab) m.vocab_multiple = h.padded_vocab;
  w.params = std::move(file.tensors);
  if (h.version == checkpoint::kLlmcVersionBf16) w.notes.push_back("llm.c version 5: bfloat16 parameters");
  return w;
}

void save_llmc_weights(const std::string& out, const ModelWeights& w, const SaveOptions& options) {
  const ModelConfig& m = w.model;
  auto need = [&](bool ok, const std::string& what) {
    HT_USAGE_CHECK(ok, "{}: llm.c files hold GPT-2 models with {}; this model has {}", out, what,
                   fmt::format("arch {}, hidden {}, ffn_hidden {}, norm_eps {}", to_string(m.arch), m.hidden,
                               m.ffn_hidden, m.norm_eps));
  };
  need(m.arch == Arch::gpt2, "arch gpt2");
  need(m.ffn_hidden == 4 * m.hidden, "an MLP of 4 x hidden");
  need(m.norm_eps == 1e-5, "LayerNorm eps 1e-5");
  checkpoint::LlmcHeader h;
  h.max_seq_len = m.max_seq_len;
  h.vocab = m.vocab;
  h.layers = m.layers;
  h.heads = m.heads;
  h.channels = m.hidden;
  h.padded_vocab = m.padded_vocab();
  checkpoint::write_llmc_checkpoint(out, h, w.params, options.dtype);
}

}  // namespace hetu::weights
