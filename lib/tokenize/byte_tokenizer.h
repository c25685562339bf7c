// Byte-level tokenizer: every byte is its own id (vocab 256), so any text round-trips. Its
// document separator (eot_id) is 0, the NUL byte, which text files do not hold: `hetu data
// prepare` starts every document with it and refuses text that contains it.
#pragma once

#include "lib/tokenize/tokenizer.h"

namespace hetu::tokenize {

class ByteTokenizer final : public Tokenizer {
 public:
  std::vector<int32_t> encode(std::string_view text) const override;
  std::string decode(const std::vector<int32_t>& ids) const override;
  int64_t vocab_size() const override { return 256; }
  int32_t eot_id() const override { return 0; }
};

}  // namespace hetu::tokenize
