// `hetu generate CHECKPOINT --prompt "..." --max-tokens N --temperature T --top-k K --seed S`:
// the checkpoint's model samples text after the prompt (lib/inference/generate.h), printed as
// it comes.
#include <spdlog/spdlog.h>

#include <cstdio>

#include "app/commands.h"
#include "lib/inference/generate.h"
#include "lib/ops/ops.h"
#include "lib/util/error.h"

namespace hetu::app {

int run_generate(const GenerateOptions& options) {
  HT_USAGE_CHECK(options.max_tokens >= 1, "--max-tokens must be >= 1, got {}", options.max_tokens);
  HT_USAGE_CHECK(options.temperature >= 0, "--temperature must be >= 0, got {}", options.temperature);
  ops::set_num_threads(options.threads);
  // --vocab replaces the stored data.vocab (a TOML basic string: escape '\\' and '"').
  std::vector<std::string> overrides;
  if (!options.vocab_dir.empty()) {
    std::string quoted;
    for (char c : options.vocab_dir) {
      if (c == '\\' || c == '"') quoted += '\\';
      quoted += c;
    }
    overrides.push_back("data.vocab=\"" + quoted + "\"");
  }
  const inference::TrainedModel trained = inference::load_trained_model(options.checkpoint, overrides);
  const std::unique_ptr<tokenize::Tokenizer> tokenizer = inference::job_tokenizer(trained, options.vocab_dir);
  const int64_t limit = trained.job.config.model.max_seq_len;
  const std::vector<int32_t> ids = inference::prompt_ids(*tokenizer, options.prompt, limit);
  std::fputs(options.prompt.c_str(), stdout);
  const inference::Generation g = inference::generate(
      *trained.model, *tokenizer, ids,
      {.max_tokens = options.max_tokens, .temperature = options.temperature, .top_k = options.top_k, .seed = options.seed},
      [](const std::string& piece) {
        std::fputs(piece.c_str(), stdout);
        std::fflush(stdout);
      });
  std::fputs("\n", stdout);
  if (g.context_full) {
    spdlog::warn("stopped after {} of {} tokens: the model's context is {} positions (model.max_seq_len), and the "
                 "prompt took {}", g.generated.size(), options.max_tokens, limit, ids.size());
  }
  return 0;
}

}  // namespace hetu::app
