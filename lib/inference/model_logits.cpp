// read_token_rows and model_logits (model_logits.h).
#include "lib/inference/model_logits.h"

#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "lib/autograd/grad_mode.h"
#include "lib/models/language_model.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace hetu::inference {

Tensor read_token_rows(const std::string& path, const ModelConfig& m) {
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

Tensor model_logits(const weights::ModelWeights& w, const Tensor& tokens) {
  std::unique_ptr<LanguageModel> model = build_model(w.model, /*seed=*/0);
  for (const nn::NamedParameter& p : model->named_parameters()) {
    auto it = w.params.find(p.name);
    HT_CHECK(it != w.params.end(), "ckpt logits: the model's parameter {} is not among the converted tensors", p.name);
    p.tensor.copy_from(it->second);
  }
  autograd::NoGradGuard no_grad;
  return model->forward(tokens).contiguous();
}

}  // namespace hetu::inference
