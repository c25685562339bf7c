// make_tokenizer(): the factory over the tokenizer kinds.
#include "lib/io/tokenizer.h"

#include "lib/io/byte_tokenizer.h"
#include "lib/io/gpt2_tokenizer.h"
#include "lib/util/error.h"

namespace hetu::io {

std::unique_ptr<Tokenizer> make_tokenizer(TokenizerKind kind, const std::string& vocab_dir) {
  switch (kind) {
    case TokenizerKind::byte: return std::make_unique<ByteTokenizer>();
    case TokenizerKind::gpt2: return std::make_unique<Gpt2Tokenizer>(vocab_dir);
  }
  HT_THROW("unknown tokenizer kind");
}

}  // namespace hetu::io
