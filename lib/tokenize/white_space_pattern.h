// Rewrites `\s` and `\S` in a regular expression to Unicode's White_Space property spelled out
// as a class, so that PCRE2 matches white space as tiktoken's regex engine (Rust's regex crate)
// does. PCRE2's \s under PCRE2_UCP also takes a few characters that are not White_Space (U+180E
// MONGOLIAN VOWEL SEPARATOR, white space before Unicode 6.3), which would split text differently.
//
//   with_unicode_white_space(R"(\s+(?!\S)|[^\s\p{L}])") ==
//       R"([\t-\r\x{20}...]+(?![^\t-\r\x{20}...])|[^\t-\r\x{20}...\p{L}])"
#pragma once

#include <string>
#include <string_view>

namespace hetu::tokenize {

// `\S` inside a character class has no class-content spelling: such a pattern is an error.
std::string with_unicode_white_space(std::string_view pattern);

}  // namespace hetu::tokenize
