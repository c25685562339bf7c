// Generation and logits of a trained model (lib/inference/generate.h, model_logits.h) against
// references written here: greedy generation against the argmax of a full forward pass
// recomputed for every new token (no KV cache), the end-of-text id and a full context ending
// it; the prompt's ids with their fallback and context check; the tokens file's errors, each
// naming the file and line.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "lib/autograd/grad_mode.h"
#include "lib/inference/generate.h"
#include "lib/inference/model_logits.h"
#include "lib/models/language_model.h"
#include "lib/tokenize/byte_tokenizer.h"
#include "lib/util/error.h"
#include "tests/temp_dir.h"
#include "tests/usage_error.h"

using namespace hetu;
using namespace hetu::inference;

namespace {

// Bytes, with end-of-text `eot` (-1: none).
class TestTokenizer final : public tokenize::Tokenizer {
 public:
  explicit TestTokenizer(int32_t eot) : eot_(eot) {}
  std::vector<int32_t> encode(std::string_view text) const override { return bytes_.encode(text); }
  std::string decode(const std::vector<int32_t>& ids) const override { return bytes_.decode(ids); }
  int64_t vocab_size() const override { return 256; }
  int32_t eot_id() const override { return eot_; }

 private:
  tokenize::ByteTokenizer bytes_;
  int32_t eot_;
};

// The argmax over the first `vocab` logits of the last position of `ids`, from a forward pass
// over the whole sequence.
int32_t greedy_next(LanguageModel& model, const std::vector<int32_t>& ids, int64_t vocab) {
  autograd::NoGradGuard no_grad;
  const Tensor logits = model.forward(tensor_from(ids, {1, static_cast<int64_t>(ids.size())})).contiguous();
  const int64_t V = logits.size(-1);
  const float* last = logits.data<float>() + (logits.size(1) - 1) * V;
  return static_cast<int32_t>(std::max_element(last, last + std::min(V, vocab)) - last);
}

}  // namespace

TEST_CASE("generate: greedy tokens are the argmax of the whole sequence recomputed", "[generate]") {
  const std::unique_ptr<LanguageModel> model = build_model(*find_flavor(Arch::gpt2, "tiny"), 7);
  const TestTokenizer tokenizer(-1);
  const std::vector<int32_t> prompt = {72, 101, 108};
  std::vector<int32_t> expected = prompt;
  for (int i = 0; i < 6; ++i) expected.push_back(greedy_next(*model, expected, tokenizer.vocab_size()));
  std::string pieces;
  const Generation g = generate(*model, tokenizer, prompt, {.max_tokens = 6, .temperature = 0},
                                [&](const std::string& piece) { pieces += piece; });
  CHECK(g.generated == std::vector<int32_t>(expected.begin() + 3, expected.end()));
  CHECK(pieces == tokenizer.decode(g.generated));
  CHECK_FALSE(g.context_full);
}

TEST_CASE("generate: the end-of-text id ends it and is not returned", "[generate]") {
  const std::unique_ptr<LanguageModel> model = build_model(*find_flavor(Arch::gpt2, "tiny"), 7);
  const std::vector<int32_t> prompt = {72, 101, 108};
  std::vector<int32_t> ids = prompt;
  for (int i = 0; i < 4; ++i) ids.push_back(greedy_next(*model, ids, 256));
  // The end-of-text id as the first greedy token: nothing comes out.
  const Generation none = generate(*model, TestTokenizer(ids[3]), prompt, {.max_tokens = 4, .temperature = 0},
                                   [](const std::string&) {});
  CHECK(none.generated.empty());
  CHECK_FALSE(none.context_full);
  // An end-of-text id that no greedy token is: all max_tokens come out.
  int32_t unused = 0;
  while (std::find(ids.begin() + 3, ids.end(), unused) != ids.end()) ++unused;
  const Generation all = generate(*model, TestTokenizer(unused), prompt, {.max_tokens = 4, .temperature = 0},
                                  [](const std::string&) {});
  CHECK(all.generated == std::vector<int32_t>(ids.begin() + 3, ids.end()));
}

TEST_CASE("generate: a full context stops it and says so", "[generate]") {
  const ModelConfig config = *find_flavor(Arch::gpt2, "tiny");
  const std::unique_ptr<LanguageModel> model = build_model(config, 7);
  const TestTokenizer tokenizer(-1);
  const std::vector<int32_t> prompt(static_cast<size_t>(config.max_seq_len - 2), 65);
  const Generation g = generate(*model, tokenizer, prompt, {.max_tokens = 10, .temperature = 0}, [](const std::string&) {});
  // Every token fed to the model takes a position; the last one sampled is never fed.
  CHECK(g.generated.size() == static_cast<size_t>(config.max_seq_len) - prompt.size() + 1);
  CHECK(g.context_full);
}

TEST_CASE("generate: a prompt's ids, the fallback for an empty one, the context check", "[generate]") {
  CHECK(prompt_ids(TestTokenizer(-1), "Hi", 8) == std::vector<int32_t>{72, 105});
  CHECK(prompt_ids(TestTokenizer(-1), "", 8) == std::vector<int32_t>{10});  // a newline
  CHECK(prompt_ids(TestTokenizer(0), "", 8) == std::vector<int32_t>{0});    // the end-of-text id
  CHECK(test::usage_error_message([] { prompt_ids(TestTokenizer(-1), "abcd", 4); }) ==
        "the prompt is 4 tokens; the model's context is 4");
}

TEST_CASE("model logits: a tokens file's ids, and every error naming the file and line", "[generate]") {
  const ModelConfig config = *find_flavor(Arch::gpt2, "tiny");
  hetu::test::TempDir dir("read_token_rows");
  dir.write("good.txt", "1 2 3\n\n4 5 6\n");
  const Tensor rows = read_token_rows(dir.file("good.txt"), config);
  CHECK(rows.shape() == Shape{2, 3});
  CHECK(to_vector(rows) == std::vector<double>{1, 2, 3, 4, 5, 6});
  dir.write("ragged.txt", "1 2 3\n4 5\n");
  CHECK(test::usage_error_message([&] { read_token_rows(dir.file("ragged.txt"), config); }) ==
        dir.file("ragged.txt") + ":2: 2 ids, the first line had 3");
  dir.write("big.txt", "1 " + std::to_string(config.vocab) + "\n");
  CHECK(test::usage_error_message([&] { read_token_rows(dir.file("big.txt"), config); }) ==
        dir.file("big.txt") + ":1: '" + std::to_string(config.vocab) + "' is not a token id in [0, " +
            std::to_string(config.vocab) + ")");
  dir.write("empty.txt", "\n \n");
  CHECK(test::usage_error_message([&] { read_token_rows(dir.file("empty.txt"), config); }) == dir.file("empty.txt") + ": no token ids");
}
