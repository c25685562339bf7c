// `hetu data prepare`: text files -> llm.c token shards (val_000000.bin, train_000000.bin, ...)
// for the [data] table of a job file. The work is io::prepare_token_shards(); this command picks
// the tokenizer, times the run and prints a one-line summary.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hetu::app {

struct DataPrepareOptions {
  std::string tokenizer = "gpt2";  // "byte" or "gpt2"
  std::string vocab_dir;           // gpt2: the folder with encoder.json and vocab.bpe
  std::string out_dir;             // created if missing; must hold no *.bin file
  int64_t val_tokens = 0;          // the first val_tokens tokens go to val_000000.bin
  int64_t shard_tokens = 100'000'000;
  std::string document_start;       // a regex: each line it matches starts a document ("" : one per input)
  std::vector<std::string> inputs;  // one document each, or split at document_start; "-" is stdin
};

int run_data_prepare(const DataPrepareOptions& options);

}  // namespace hetu::app
