// make_tokenizer(): the factory over the tokenizer kinds.
#include "lib/tokenize/tokenizer.h"

#include "lib/tokenize/byte_tokenizer.h"
#include "lib/tokenize/gpt2_tokenizer.h"
#include "lib/tokenize/tiktoken_tokenizer.h"
#include "lib/util/error.h"

namespace hetu::tokenize {

std::unique_ptr<Tokenizer> make_tokenizer(TokenizerKind kind, const std::string& vocab, const std::string& pattern) {
  HT_USAGE_CHECK(kind == TokenizerKind::tiktoken || pattern.empty(),
                 "a tokenizer pattern ('{}') is for the tiktoken tokenizer only", pattern);
  switch (kind) {
    case TokenizerKind::byte: return std::make_unique<ByteTokenizer>();
    case TokenizerKind::gpt2: return std::make_unique<Gpt2Tokenizer>(vocab);
    case TokenizerKind::tiktoken: {
      HT_USAGE_CHECK(!pattern.empty(), "the tiktoken tokenizer needs a pattern ({})", builtin_tiktoken_names());
      HT_USAGE_CHECK(!vocab.empty(), "the tiktoken tokenizer needs its ranks file (a .tiktoken file)");
      const TiktokenEncoding& encoding = builtin_tiktoken_encoding(pattern);
      return std::make_unique<TiktokenTokenizer>(load_tiktoken_ranks(vocab), encoding, vocab);
    }
  }
  HT_THROW("unknown tokenizer kind");
}

}  // namespace hetu::tokenize
