// Shared by the tiktoken tests: the cl100k_base / o200k_base tokenizers over the ranks files of
// tests/data/tiktoken (loaded once per binary), and a generator of random mixed texts.
#pragma once

#include <random>
#include <string>

#include "lib/tokenize/tiktoken_tokenizer.h"

namespace hetu::test {

inline const std::string kTiktokenDir = HETU_TIKTOKEN_DIR;  // tests/data/tiktoken

// name: "cl100k" or "o200k".
inline const tokenize::TiktokenTokenizer& tiktoken(const std::string& name) {
  static const tokenize::TiktokenTokenizer cl100k(
      tokenize::load_tiktoken_ranks(kTiktokenDir + "/cl100k_base.tiktoken"),
      tokenize::builtin_tiktoken_encoding("cl100k"));
  static const tokenize::TiktokenTokenizer o200k(
      tokenize::load_tiktoken_ranks(kTiktokenDir + "/o200k_base.tiktoken"),
      tokenize::builtin_tiktoken_encoding("o200k"));
  return name == "cl100k" ? cl100k : o200k;
}

// Random valid UTF-8 mixing English, code, digits, CJK, Cyrillic, emoji, combining marks,
// contractions and whitespace runs.
inline std::string random_mixed_text(std::mt19937& rng, int pieces) {
  static const char* const kPieces[] = {
      "the", " quick", " brown", "Fox", " JUMPS", "'s", "'LL", "'Re", " don't", "I'm", " 42", "1234567", "3.14159",
      "int main() {", " return 0;", "}", "\n", "\r\n", "\n\n\n", "    ", "\t", "  \n  ", " ", "  ", "x += y->z;",
      "def f(a, b):", "\n    pass", "//", "/* c */", "https://example.com/a?b=c", "中文字符", "日本語", "한국어",
      "текст", "Привет", "naïve", "café", "e\xcc\x81", "🎉", "🚀🚀", "👩‍👩‍👧", "—", "“q”", "«»", "¿Qué?", "ß",
      "ǅ", "Ⅻ", "٣٤٥", "\xc2\xa0", "\xe3\x80\x80", "<|endoftext|>", "<|fim_prefix|>", "!!!", "...", "$$", "#"};
  constexpr size_t kCount = sizeof(kPieces) / sizeof(kPieces[0]);
  std::uniform_int_distribution<size_t> pick(0, kCount - 1);
  std::string text;
  for (int i = 0; i < pieces; ++i) text += kPieces[pick(rng)];
  return text;
}

}  // namespace hetu::test
