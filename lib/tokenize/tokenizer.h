// Tokenizers: text bytes <-> token ids. Byte-level (vocab 256, id = byte value) needs no
// files; GPT-2 BPE reads encoder.json and vocab.bpe from a directory; tiktoken-format BPE
// (cl100k, o200k, llama3) reads a .tiktoken ranks file. decode(encode(s)) == s for every byte
// string.
//
//   std::unique_ptr<Tokenizer> tok = make_tokenizer(TokenizerKind::gpt2, "tests/data/gpt2");
//   tok->encode("Hello world") == {15496, 995};
//   make_tokenizer(TokenizerKind::tiktoken, "cl100k_base.tiktoken", "cl100k");
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hetu::tokenize {

enum class TokenizerKind { byte, gpt2, tiktoken };

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // Text is read literally: the text of a special token ("<|endoftext|>") is plain text.
  virtual std::vector<int32_t> encode(std::string_view text) const = 0;
  // The same, but the tokenizer's special tokens in the text become their ids (tiktoken); a
  // tokenizer without special tokens encodes as encode().
  virtual std::vector<int32_t> encode_with_special(std::string_view text) const { return encode(text); }
  // Ids outside [0, vocab_size) are an error naming the id.
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
  virtual int64_t vocab_size() const = 0;
  // The id that separates documents (GPT-2: <|endoftext|> = 50256; byte: 0, the NUL byte; -1: none).
  virtual int32_t eot_id() const = 0;
};

// vocab: gpt2, the directory with encoder.json and vocab.bpe; tiktoken, the .tiktoken ranks
// file. pattern: tiktoken only, a built-in encoding (tiktoken_encoding.h); given with another
// kind it is an error. Missing or malformed files are a UsageError naming the file.
std::unique_ptr<Tokenizer> make_tokenizer(TokenizerKind kind, const std::string& vocab = "",
                                          const std::string& pattern = "");

}  // namespace hetu::tokenize
