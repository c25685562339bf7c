// `hetu data prepare`: tokenizer choice, timing and the summary line around
// dataset::prepare_token_shards() (see lib/dataset/token_shard.h for the split and file rules), and
// `hetu data balance`: the packing balance table (lib/dataset/document_packing.h).
#include "app/cmd_data.h"

#include <chrono>
#include <cstdio>
#include <fmt/core.h>
#include <memory>
#include <optional>
#include <fmt/ranges.h>
#include <string_view>

#include "lib/dataset/data_loader.h"
#include "lib/dataset/document_packing.h"
#include "lib/dataset/token_shard.h"
#include "lib/tokenize/tokenizer.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace hetu::app {

int run_data_prepare(const DataPrepareOptions& options) {
  tokenize::TokenizerKind kind = tokenize::TokenizerKind::byte;
  if (options.tokenizer == "gpt2") {
    kind = tokenize::TokenizerKind::gpt2;
  } else if (options.tokenizer == "tiktoken") {
    kind = tokenize::TokenizerKind::tiktoken;
    HT_USAGE_CHECK(!options.vocab_dir.empty(), "data prepare: tiktoken tokenizer needs --vocab FILE (a .tiktoken ranks file)");
    HT_USAGE_CHECK(!options.pattern.empty(), "data prepare: tiktoken tokenizer needs --pattern (cl100k, o200k, llama3)");
  } else {
    HT_USAGE_CHECK(options.tokenizer == "byte", "data prepare: unknown tokenizer '{}' (expected byte, gpt2 or tiktoken)",
                   options.tokenizer);
  }
  HT_USAGE_CHECK(options.pattern.empty() || kind == tokenize::TokenizerKind::tiktoken,
                 "data prepare: --pattern is for --tokenizer tiktoken only (not {})", options.tokenizer);
  const auto start = std::chrono::steady_clock::now();
  const std::unique_ptr<tokenize::Tokenizer> tokenizer = tokenize::make_tokenizer(kind, options.vocab_dir, options.pattern);
  const dataset::PrepareSummary summary = dataset::prepare_token_shards(*tokenizer, options.inputs, options.out_dir,
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

int run_data_balance(const DataBalanceOptions& options) {
  std::vector<int64_t> shares;
  for (std::string_view field : split(options.shares, ',')) {
    const std::optional<int64_t> v = parse_int64(trim(field));
    HT_USAGE_CHECK(v && *v >= 1, "data balance: --shares '{}': expected rows per replica, integers >= 1 split by commas",
                   options.shares);
    shares.push_back(*v);
  }
  HT_USAGE_CHECK(options.seq_len >= 1, "data balance: --seq-len must be >= 1, got {}", options.seq_len);
  std::vector<int64_t> lengths;
  std::string source;
  if (options.data.empty()) {
    HT_USAGE_CHECK(options.min_len >= 1 && options.max_len >= options.min_len && options.documents >= 1,
                   "data balance: --documents {} of --min-len {} to --max-len {} tokens", options.documents,
                   options.min_len, options.max_len);
    lengths = dataset::long_tailed_lengths(options.documents, options.min_len, options.max_len, options.seed);
    source = fmt::format("{} documents of {}-{} tokens (long-tailed, seed {})", options.documents, options.min_len,
                         options.max_len, options.seed);
  } else {
    int64_t rows = 0;
    for (int64_t s : shares) rows += s;
    const dataset::DataLoader loader({.pattern = options.data, .seq_len = options.seq_len, .global_batch = rows,
                                 .share_count = shares[0], .packing = dataset::Packing::documents, .shares = shares});
    lengths = loader.documents()->document_lengths();
    source = fmt::format("{} documents of {}", lengths.size(), options.data);
  }
  std::vector<int64_t> windows;
  for (std::string_view field : split(options.balance_windows, ',')) {
    const std::optional<int64_t> v = parse_int64(trim(field));
    HT_USAGE_CHECK(v && *v >= 1, "data balance: --balance-window '{}': expected global batches per window, integers "
                   ">= 1 split by commas", options.balance_windows);
    windows.push_back(*v);
  }
  std::vector<dataset::BalanceReport> reports;
  for (int64_t w : windows)
    reports.push_back(dataset::packing_balance(lengths, shares, options.seq_len, {options.linear_per_token}, w));
  const dataset::BalanceReport& r = reports.front();
  HT_USAGE_CHECK(r.batches > 0, "data balance: {} do not fill one global batch", source);
  std::string line = fmt::format("data balance: {}, seq_len {}, shares {}, {} global batches\n", source,
                                 options.seq_len, fmt::join(shares, ":"), r.batches);
  line += fmt::format("{:<20} {:>20} {:>16} {:>12}\n", "packing", "attention max/mean", "cost max/mean",
                      "least fill");
  line += fmt::format("{:<20} {:>20.3f} {:>16.3f} {:>12.3f}\n", "in order", r.in_order_attention, r.in_order_total,
                      r.in_order_fill);
  for (size_t i = 0; i < windows.size(); ++i) {
    const dataset::BalanceReport& w = reports[i];
    const std::string name = windows[i] == 1 ? std::string("balanced") : fmt::format("balanced, window {}", windows[i]);
    line += fmt::format("{:<20} {:>20.3f} {:>16.3f} {:>12.3f}\n", name, w.balanced_attention, w.balanced_total,
                        w.balanced_fill);
  }
  if (r.attention_bound > 0) line += fmt::format("{:<20} {:>20.3f}\n", "bound", r.attention_bound);
  line += fmt::format("(per replica, per share row, averaged over the global batches; cost = L² per document + {} per "
                      "token slot; least fill: the emptiest batch's tokens / its rows' slots; bound: no packing of the "
                      "stream-order batches (window 1) has a lower attention max/mean, lib/dataset/packing_bound.h; a "
                      "window re-forms its batches, lib/dataset/window_packing.h)\n",
                      options.linear_per_token);
  std::fputs(line.c_str(), stdout);
  return 0;
}

}  // namespace hetu::app
