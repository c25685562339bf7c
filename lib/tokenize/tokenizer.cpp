// make_tokenizer(): the factory over the tokenizer kinds.
#include "lib/tokenize/tokenizer.h"

#include "lib/tokenize/byte_tokenizer.h"
#include "lib/tokenize/gpt2_tokenizer.h"
#include "lib/util/error.h"

namespace hetu::tokenize {

std::unique_ptr<Tokenizer> make_tokenizer(TokenizerKind kind, const std::string& vocab_dir) {
  switch (kind) {
    case TokenizerKind::byte: return std::make_unique<ByteTokenizer>();
    case TokenizerKind::gpt2: return std::make_unique<Gpt2Tokenizer>(vocab_dir);
  }
  HT_THROW("unknown tokenizer kind");
}

}  // namespace hetu::tokenize
