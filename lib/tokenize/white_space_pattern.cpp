// with_unicode_white_space() (see white_space_pattern.h): one pass over the pattern that knows
// escapes and character classes, enough for the tokenizers' patterns.
#include "lib/tokenize/white_space_pattern.h"

#include "lib/util/error.h"

namespace hetu::tokenize {
namespace {

// Unicode's White_Space property (unchanged since 6.3) (PropList.txt), as class contents.
constexpr std::string_view kWhiteSpace =
    R"(\t-\r\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";

}  // namespace

std::string with_unicode_white_space(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 256);
  bool in_class = false;
  size_t class_start = 0;  // where the class's contents begin (after '[' or '[^')
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[++i];
      if (e == 's') {
        out += in_class ? std::string(kWhiteSpace) : "[" + std::string(kWhiteSpace) + "]";
      } else if (e == 'S') {
        HT_CHECK(!in_class, "with_unicode_white_space: \\S inside a character class at offset {} of {}", i - 1,
                 pattern);
        out += "[^" + std::string(kWhiteSpace) + "]";
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      class_start = i + 1;
      continue;
    }
    if (in_class && c == ']' && i > class_start) in_class = false;  // a ']' first in a class is literal
    out += c;
  }
  return out;
}

}  // namespace hetu::tokenize
