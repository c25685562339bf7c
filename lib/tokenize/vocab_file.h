// A tokenizer's vocabulary file (GPT-2's encoder.json and vocab.bpe, a tiktoken ranks file)
// read whole; each tokenizer words its own error around the reason.
#pragma once

#include <optional>
#include <string>

namespace hetu::tokenize {

// The file's bytes, or nullopt with `reason` set (strerror of the failed open, or "read error").
std::optional<std::string> read_vocab_file(const std::string& path, std::string& reason);

}  // namespace hetu::tokenize
