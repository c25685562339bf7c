// `hetu tokenize`: stdin -> stdout between text and token ids, with GPT-2 BPE, tiktoken-format
// BPE (--tokenizer tiktoken --vocab FILE.tiktoken --pattern cl100k|o200k|llama3) or bytes.
// Special-token text is plain text unless --allow-special.
// Encode prints ids separated by spaces; --decode reads whitespace-separated ids and writes
// the raw bytes. --jsonl works line by line: a JSON string per line in, a JSON array of ids
// per line out (--decode: the reverse). Bad input lines are UsageErrors naming the line.
//
//   echo '"Hello world"' | hetu tokenize --vocab tests/data/gpt2 --jsonl   -> [15496,995]
#pragma once

#include <string>

namespace hetu::app {

struct TokenizeOptions {
  std::string tokenizer = "gpt2";  // gpt2 | byte | tiktoken
  std::string vocab_dir;           // gpt2: encoder.json + vocab.bpe; empty: $HETU_GPT2_VOCAB. tiktoken: the .tiktoken file
  std::string pattern;             // tiktoken only: cl100k | o200k | llama3
  bool allow_special = false;      // encode: special tokens' text -> their ids
  bool jsonl = false;              // one JSON value per line, in and out
  bool decode = false;             // ids -> text
};

int run_tokenize(const TokenizeOptions& options);

}  // namespace hetu::app
