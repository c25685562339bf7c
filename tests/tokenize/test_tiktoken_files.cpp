// tiktoken ranks files and descriptions: a bad line (bad base64, missing rank, duplicate rank,
// repeated token) refused naming the file and line, a missing byte or file refused by name,
// the factory's errors (unknown pattern, pattern with another tokenizer), and the llama3
// description on a small synthetic ranks file: its special ids and its pattern's splits.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "lib/tokenize/tiktoken_tokenizer.h"
#include "lib/tokenize/tokenizer.h"
#include "tests/temp_dir.h"
#include "tests/usage_error.h"

namespace {

using hetu::test::TempDir;
using hetu::test::usage_error_message;
using namespace hetu::tokenize;

std::string base64(std::string_view bytes) {
  static const char* const kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t word = 0;
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    for (size_t k = 0; k < 3; ++k) word = (word << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    for (size_t k = 0; k < 4; ++k) out += k <= n ? kAlphabet[(word >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

// Ranks 0..255: the single bytes; then `tokens` in order.
std::string ranks_text(const std::vector<std::string>& tokens) {
  std::string text;
  for (int b = 0; b < 256; ++b) text += base64(std::string(1, static_cast<char>(b))) + " " + std::to_string(b) + "\n";
  for (size_t i = 0; i < tokens.size(); ++i) text += base64(tokens[i]) + " " + std::to_string(256 + i) + "\n";
  return text;
}

std::string load_error(const TempDir& dir, const std::string& text) {
  dir.write("bad.tiktoken", text);
  return usage_error_message([&] { (void)load_tiktoken_ranks(dir.file("bad.tiktoken")); });
}

}  // namespace

TEST_CASE("tiktoken ranks file with a bad line is refused by file and line", "[tokenizer]") {
  TempDir dir("tiktoken_ranks");
  const std::string path = dir.file("bad.tiktoken");
  const std::string good = ranks_text({"ab"});
  CHECK(load_error(dir, good) == "(no usage error)");
  CHECK(load_error(dir, good + "Y!== 300\n") ==
        "tiktoken ranks file " + path + ":258: \"Y!==\" is not valid base64");
  CHECK(load_error(dir, good + "YWJj 300\nYWJ 301\n") ==
        "tiktoken ranks file " + path + ":259: \"YWJ\" is not valid base64");
  CHECK(load_error(dir, good + "YWJj\n") ==
        "tiktoken ranks file " + path + ":258: expected \"BASE64 RANK\", got \"YWJj\"");
  CHECK(load_error(dir, good + "YWJj x7\n") ==
        "tiktoken ranks file " + path + ":258: rank \"x7\" is not an integer in [0, 2^30)");
  CHECK(load_error(dir, good + "YWJj 256\n") == "tiktoken ranks file " + path + ":258: rank 256 is already given on line 257");
  CHECK(load_error(dir, good + "YWI= 300\n") ==
        "tiktoken ranks file " + path + ":258: token of rank 300 repeats the token of rank 256");
  CHECK(load_error(dir, "YQ== 0\n") == "tiktoken ranks file " + path + ": no rank for the single byte 0x00 (every byte needs one)");
  CHECK(load_error(dir, "") == "tiktoken ranks file " + path + ": holds no ranks");
  CHECK_THAT(usage_error_message([&] { (void)load_tiktoken_ranks(dir.file("missing.tiktoken")); }),
             Catch::Contains("tiktoken ranks file " + dir.file("missing.tiktoken") + ": cannot read it"));
}

TEST_CASE("make_tokenizer builds tiktoken and refuses bad choices by name", "[tokenizer]") {
  TempDir dir("tiktoken_factory");
  dir.write("small.tiktoken", ranks_text({"ab"}));
  const auto tok = make_tokenizer(TokenizerKind::tiktoken, dir.file("small.tiktoken"), "cl100k");
  CHECK(tok->encode("ab") == std::vector<int32_t>{256});
  CHECK(tok->eot_id() == 100257);
  CHECK(usage_error_message([&] { (void)make_tokenizer(TokenizerKind::tiktoken, dir.file("small.tiktoken"), "p50k"); }) ==
        "unknown tiktoken pattern 'p50k' (expected cl100k, o200k, llama3)");
  CHECK(usage_error_message([&] { (void)make_tokenizer(TokenizerKind::tiktoken, dir.file("small.tiktoken"), ""); }) ==
        "the tiktoken tokenizer needs a pattern (cl100k, o200k, llama3)");
  CHECK(usage_error_message([&] { (void)make_tokenizer(TokenizerKind::gpt2, "x", "cl100k"); }) ==
        "a tokenizer pattern ('cl100k') is for the tiktoken tokenizer only");
  // A special id that the ranks file gives to a token: the file does not belong to the pattern.
  std::vector<std::string> many;
  for (int i = 0; i < 100100; ++i) many.push_back("t" + std::to_string(i));
  dir.write("big.tiktoken", ranks_text(many));
  CHECK_THAT(usage_error_message([&] { (void)make_tokenizer(TokenizerKind::tiktoken, dir.file("big.tiktoken"), "cl100k"); }),
             Catch::Contains("gives rank 100257 to a token, but 100257 is the id of the special token <|endoftext|>"));
}

TEST_CASE("tiktoken llama3 description: special ids and pattern splits", "[tokenizer]") {
  const TiktokenEncoding& e = builtin_tiktoken_encoding("llama3");
  REQUIRE(e.special_tokens.size() == 256);
  CHECK(e.id_range() == 128256);
  CHECK(e.special_tokens[0] == std::pair<std::string, int32_t>{"<|begin_of_text|>", 128000});
  CHECK(e.special_tokens[5] == std::pair<std::string, int32_t>{"<|reserved_special_token_2|>", 128005});
  CHECK(e.special_tokens[9] == std::pair<std::string, int32_t>{"<|eot_id|>", 128009});
  CHECK(e.special_tokens[11] == std::pair<std::string, int32_t>{"<|reserved_special_token_3|>", 128011});
  CHECK(e.special_tokens[255] == std::pair<std::string, int32_t>{"<|reserved_special_token_247|>", 128255});

  // Whole-piece tokens for the splits the pattern should make, and decoys for wrong splits.
  const std::vector<std::string> tokens = {"HELLO", "'LL", "AMA", "123", "45", "'LLAMA", "12345", " 123",
                                           "\n\n", " \n", "  ", "ab"};
  TiktokenTokenizer tok(parse_tiktoken_ranks(ranks_text(tokens), "synthetic.tiktoken"), e);
  CHECK(tok.vocab_size() == 128256);
  CHECK(tok.eot_id() == 128001);
  auto id = [&](const std::string& t) { return static_cast<int32_t>(256 + (std::find(tokens.begin(), tokens.end(), t) - tokens.begin())); };
  // (?i:'ll) takes "'LL" before the letters; \p{N}{1,3} cuts digits in threes; a space before
  // digits is its own piece.
  CHECK(tok.encode("HELLO'LLAMA 12345") == std::vector<int32_t>{id("HELLO"), id("'LL"), id("AMA"), ' ', id("123"), id("45")});
  // \s*[\r\n]+ ends a whitespace run at its last newline; \s+(?!\S) leaves one space for a word.
  CHECK(tok.encode("ab\n\n   ab") == std::vector<int32_t>{id("ab"), id("\n\n"), id("  "), ' ', id("ab")});
  CHECK(tok.encode("<|begin_of_text|>") != std::vector<int32_t>{128000});
  CHECK(tok.encode_with_special("<|begin_of_text|>ab<|end_of_text|>") == std::vector<int32_t>{128000, id("ab"), 128001});
  CHECK(tok.decode({128000, 128009, 128255}) == "<|begin_of_text|><|eot_id|><|reserved_special_token_247|>");
  CHECK_THAT(usage_error_message([&] { (void)tok.decode({200}); }), Catch::Contains("(no usage error)"));
  CHECK_THAT(usage_error_message([&] { (void)tok.decode({5000}); }), Catch::Contains("token id 5000 at position 0 is not a token"));
  CHECK_THAT(usage_error_message([&] { (void)tok.decode({128256}); }), Catch::Contains("token id 128256"));
}
