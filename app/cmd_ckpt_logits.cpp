// `hetu ckpt logits CKPT --tokens FILE --out FILE.safetensors`: run a checkpoint of any
// format `ckpt convert` reads on a batch of token ids and save the logits, so that other
// implementations (tests/python/hf_logits.py, PyTorch on a HF export) can be compared with
// hetu's forward on the same weights. FILE has one sequence per line, ids separated by
// whitespace, every line the same length; the output holds "logits" (B, T, vocab) f32 and
// "tokens" (B, T) i32.
#include <fmt/core.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "lib/weights/model_weights.h"
#include "app/commands.h"
#include "lib/autograd/grad_mode.h"
#include "lib/checkpoint/safetensors.h"
#include "lib/ops/ops.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"
#include "lib/models/language_model.h"

namespace hetu::app {

namespace {

// (B, T) i32 from the tokens file; ids must be in [0, vocab), T in [1, max_seq_len].
Tensor read_tokens(const std::string& path, const ModelConfig& m) {
  std::ifstream in(path);
  HT_USAGE_CHECK(in.good(), "{}: cannot open", path);
  std::vector<int32_t> ids;
  int64_t rows = 0, width = -1, line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (trim(line).empty()) continue;
    int64_t count = 0;
    std::istringstream words(line);
    for (std::string word; words >> word; ++count) {
      std::optional<int64_t> id = parse_int64(word);
      HT_USAGE_CHECK(id && *id >= 0 && *id < m.vocab, "{}:{}: '{}' is not a token id in [0, {})", path, line_no, word,
                     m.vocab);
      ids.push_back(static_cast<int32_t>(*id));
    }
    HT_USAGE_CHECK(width < 0 || count == width, "{}:{}: {} ids, the first line had {}", path, line_no, count, width);
    width = count;
    ++rows;
  }
  HT_USAGE_CHECK(rows > 0, "{}: no token ids", path);
  HT_USAGE_CHECK(width <= m.max_seq_len, "{}: sequences of {} tokens exceed the model's max_seq_len {}", path, width,
                 m.max_seq_len);
  return tensor_from(ids, {rows, width});
}

}  // namespace

int run_ckpt_logits(const CkptLogitsOptions& options) {
  ops::set_num_threads(options.threads);
  const weights::ModelWeights w = weights::load_weights(options.checkpoint, weights::detect_format(options.checkpoint));
  const Tensor tokens = read_tokens(options.tokens, w.model);
  std::unique_ptr<LanguageModel> model = build_model(w.model, /*seed=*/0);
  for (const nn::NamedParameter& p : model->named_parameters()) {
    auto it = w.params.find(p.name);
    HT_CHECK(it != w.params.end(), "ckpt logits: the model's parameter {} is not among the converted tensors", p.name);
    p.tensor.copy_from(it->second);
  }
  autograd::NoGradGuard no_grad;
  const Tensor logits = model->forward(tokens).contiguous();
  checkpoint::write_safetensors(options.out, {{"logits", logits.to(DType::f32)}, {"tokens", tokens}}, {{"format", "pt"}});
  std::fputs(fmt::format("wrote {}: logits {}\n", options.out, shape_str(logits.shape())).c_str(), stdout);
  return 0;
}

}  // namespace hetu::app
