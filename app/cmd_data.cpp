// `hetu data prepare`: tokenizer choice, timing and the summary line around
// io::prepare_token_shards() (see lib/io/token_shard.h for the split and file rules).
#include "app/cmd_data.h"

#include <chrono>
#include <cstdio>
#include <fmt/core.h>
#include <memory>
#include <string_view>

#include "lib/io/token_shard.h"
#include "lib/io/tokenizer.h"
#include "lib/util/error.h"

namespace hetu::app {

int run_data_prepare(const DataPrepareOptions& options) {
  io::TokenizerKind kind = io::TokenizerKind::byte;
  if (options.tokenizer == "gpt2") {
    kind = io::TokenizerKind::gpt2;
  } else {
    HT_USAGE_CHECK(options.tokenizer == "byte", "data prepare: unknown tokenizer '{}' (expected byte or gpt2)",
                   options.tokenizer);
  }
  const auto start = std::chrono::steady_clock::now();
  const std::unique_ptr<io::Tokenizer> tokenizer = io::make_tokenizer(kind, options.vocab_dir);
  const io::PrepareSummary summary = io::prepare_token_shards(*tokenizer, options.inputs, options.out_dir,
                                                              options.val_tokens, options.shard_tokens,
                                                              options.document_start);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto plural = [](int64_t n, std::string_view word) { return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s"); };
  const int64_t val_shards = summary.val_tokens > 0 ? 1 : 0;
  const auto train_shards = static_cast<int64_t>(summary.files.size()) - val_shards;
  const std::string val = val_shards > 0 ? fmt::format("val {} in 1 shard", plural(summary.val_tokens, "token"))
                                         : std::string("no val shard");
  const std::string line = fmt::format("data prepare: {} from {} ({} tokenizer) -> {}: train {} in {}, {}, {:.2f} s\n",
                                       plural(summary.tokens, "token"), plural(summary.documents, "document"),
                                       options.tokenizer, options.out_dir, plural(summary.train_tokens, "token"),
                                       plural(train_shards, "shard"), val, seconds);
  std::fputs(line.c_str(), stdout);
  return 0;
}

}  // namespace hetu::app
