// The built-in tiktoken-format encodings: each a pre-tokenisation pattern, its special tokens
// and the one that separates documents. The ranks file is always given by path (Llama 3's is
// Meta's and cannot be shipped). Names: "cl100k" (OpenAI cl100k_base), "o200k" (o200k_base),
// "llama3" (Meta Llama 3.1's tokenizer.py: 128,000 ranks, 256 special tokens from 128000).
//
//   const TiktokenEncoding& e = builtin_tiktoken_encoding("llama3");
//   e.eot == "<|end_of_text|>";  e.id_range() == 128256;
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hetu::tokenize {

struct TiktokenEncoding {
  std::string name;                                          // "cl100k"
  std::string pattern;                                       // PCRE2 syntax, as tiktoken's pat_str
  std::vector<std::pair<std::string, int32_t>> special_tokens;  // text -> id
  std::string eot;                                           // the document separator, one of special_tokens
  // One past the largest special id: the ranks file of the encoding lies below it.
  int64_t id_range() const;
};

// "cl100k" | "o200k" | "llama3" (the _base suffix is accepted too); anything else is a
// UsageError that lists the names.
const TiktokenEncoding& builtin_tiktoken_encoding(std::string_view name);
// "cl100k, o200k, llama3", for messages.
std::string builtin_tiktoken_names();

}  // namespace hetu::tokenize
