// Tokenizers: text bytes <-> token ids. Byte-level (vocab 256, id = byte value) needs no
// files; GPT-2 BPE reads encoder.json and vocab.bpe from a directory. decode(encode(s)) == s
// for every byte string.
//
//   std::unique_ptr<Tokenizer> tok = make_tokenizer(TokenizerKind::gpt2, "tests/data/gpt2");
//   tok->encode("Hello world") == {15496, 995};
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hetu::tokenize {

enum class TokenizerKind { byte, gpt2 };

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::vector<int32_t> encode(std::string_view text) const = 0;
  // Ids outside [0, vocab_size) are an error naming the id.
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
  virtual int64_t vocab_size() const = 0;
  // The id that separates documents (GPT-2: <|endoftext|> = 50256; byte: 0, the NUL byte; -1: none).
  virtual int32_t eot_id() const = 0;
};

// vocab_dir holds encoder.json and vocab.bpe (gpt2 only); missing or malformed files are a
// UsageError naming the file.
std::unique_ptr<Tokenizer> make_tokenizer(TokenizerKind kind, const std::string& vocab_dir = "");

}  // namespace hetu::tokenize
