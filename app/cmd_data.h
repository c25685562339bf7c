// `hetu data prepare`: text files -> llm.c token shards (val_000000.bin, train_000000.bin, ...)
// for the [data] table of a job file. The work is dataset::prepare_token_shards(); this command picks
// the tokenizer, times the run and prints a one-line summary. `hetu data balance` reports how
// evenly packed documents spread attention cost over replicas.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hetu::app {

struct DataPrepareOptions {
  std::string tokenizer = "gpt2";  // "byte", "gpt2" or "tiktoken"
  std::string vocab_dir;           // gpt2: the folder with encoder.json and vocab.bpe; tiktoken: the .tiktoken file
  std::string pattern;             // tiktoken only: cl100k | o200k | llama3
  std::string out_dir;             // created if missing; must hold no *.bin file
  int64_t val_tokens = 0;          // the first val_tokens tokens go to val_000000.bin
  int64_t shard_tokens = 100'000'000;
  std::string document_start;       // a regex: each line it matches starts a document ("" : one per input)
  std::vector<std::string> inputs;  // one document each, or split at document_start; "-" is stdin
};

int run_data_prepare(const DataPrepareOptions& options);

// `hetu data balance`: per-replica attention cost after packing documents, max/mean averaged
// over the global batches, in-order next to cost-balanced packing (lib/dataset/document_packing.h)
// with the batches formed in windows of each given data.balance_window (window_packing.h),
// for a long-tailed synthetic length distribution or the documents of prepared shards.
struct DataBalanceOptions {
  std::string data;                // a glob of prepared shards; "" : synthetic lengths
  int64_t seq_len = 2048;
  std::string shares = "4,4,4,4";  // rows per replica per global batch
  std::string balance_windows = "1";  // data.balance_window values, one balanced row each
  int64_t documents = 6000;        // synthetic: how many
  int64_t min_len = 32, max_len = 2048;
  uint64_t seed = 1;
  double linear_per_token = 12.0 * 768;  // the cost column's linear term (12·hidden, GPT-2 124M)
};

int run_data_balance(const DataBalanceOptions& options);

}  // namespace hetu::app
