// Byte-level tokenizer.
#include "lib/tokenize/byte_tokenizer.h"

#include "lib/util/error.h"

namespace hetu::tokenize {

std::vector<int32_t> ByteTokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids(text.size());
  for (size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<unsigned char>(text[i]);
  return ids;
}

std::string ByteTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string text(ids.size(), '\0');
  for (size_t i = 0; i < ids.size(); ++i) {
    HT_CHECK(ids[i] >= 0 && ids[i] < 256, "byte tokenizer: id {} at position {} is outside [0, 256)", ids[i], i);
    text[i] = static_cast<char>(ids[i]);
  }
  return text;
}

}  // namespace hetu::tokenize
