// Tokenizers: GPT-2 BPE against golden ids from OpenAI's encoder.py (every line of
// tests/data/gpt2/golden.jsonl), round trips of arbitrary bytes (invalid UTF-8, NULs),
// the heap merge loop against the reference loop, the byte tokenizer, and the error messages
// for bad vocab files and out-of-range ids.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "tests/usage_error.h"
#include "lib/tokenize/byte_tokenizer.h"
#include "lib/tokenize/gpt2_tokenizer.h"
#include "lib/util/error.h"
#include "tests/temp_dir.h"

namespace {

using hetu::test::TempDir;

namespace fs = std::filesystem;
using hetu::tokenize::Gpt2Tokenizer;

const std::string kVocabDir = HETU_GPT2_VOCAB_DIR;  // tests/data/gpt2

// Loading parses a 1 MB JSON file: share one tokenizer between the tests.
const Gpt2Tokenizer& gpt2() {
  static const Gpt2Tokenizer tokenizer(kVocabDir);
  return tokenizer;
}

// A fresh folder under the system temp dir, removed at scope exit.
void copy_real_vocab(const TempDir& dir) {
  fs::copy_file(fs::path(kVocabDir) / "encoder.json", dir.path / "encoder.json");
  fs::copy_file(fs::path(kVocabDir) / "vocab.bpe", dir.path / "vocab.bpe");
}

// GPT-2's bytes_to_unicode, written out independently of the library, as UTF-8.
std::string byte_symbol(int b) {
  int cp = b;
  if (!((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF))) {
    int n = 0;
    for (int i = 0; i < b; ++i) n += !((i >= '!' && i <= '~') || (i >= 0xA1 && i <= 0xAC) || (i >= 0xAE && i <= 0xFF));
    cp = 256 + n;
  }
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

// A small vocab: the 256 byte tokens (id = byte), then `extra` ASCII tokens, then
// <|endoftext|>; vocab.bpe holds `merges` after the version line.
void write_tiny_vocab(const TempDir& dir, const std::vector<std::string>& extra, const std::string& merges) {
  nlohmann::json encoder = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) encoder[byte_symbol(b)] = b;
  int id = 256;
  for (const std::string& token : extra) encoder[token] = id++;
  encoder["<|endoftext|>"] = id;
  dir.write("encoder.json", encoder.dump());
  dir.write("vocab.bpe", "#version: 0.2\n" + merges);
}

std::string error_message(const std::function<void()>& body) {
  try {
    body();
  } catch (const hetu::Error& e) {
    return e.message();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("gpt2 reproduces every golden line of encoder.py", "[tokenizer]") {
  std::ifstream golden(kVocabDir + "/golden.jsonl");
  REQUIRE(golden);
  std::string line;
  int lines = 0;
  while (std::getline(golden, line)) {
    const auto record = nlohmann::json::parse(line);
    const std::string text = record.at("text").get<std::string>();
    const std::vector<int32_t> ids = record.at("ids").get<std::vector<int32_t>>();
    INFO("golden line " << lines + 1 << ": " << text.substr(0, 80));
    CHECK(gpt2().encode(text) == ids);
    CHECK(gpt2().decode(ids) == text);
    ++lines;
  }
  CHECK(lines == 135);
}

TEST_CASE("gpt2 vocab facts and literal special-token text", "[tokenizer]") {
  CHECK(gpt2().vocab_size() == 50257);
  CHECK(gpt2().eot_id() == 50256);
  CHECK(gpt2().decode({50256}) == "<|endoftext|>");
  // encode never parses special tokens: the text is ordinary bytes.
  const std::vector<int32_t> ids = gpt2().encode("<|endoftext|>");
  CHECK(ids.size() > 1);
  CHECK(std::find(ids.begin(), ids.end(), 50256) == ids.end());
  CHECK(gpt2().decode(ids) == "<|endoftext|>");
  CHECK(gpt2().encode(" Hello world") == std::vector<int32_t>{18435, 995});
  CHECK(gpt2().encode("").empty());
}

TEST_CASE("gpt2 round trips arbitrary bytes including invalid UTF-8 and NULs", "[tokenizer]") {
  for (const std::string& s : {std::string("\xff"), std::string("a\x80z"), std::string("\0\0 \0x", 6),
                               std::string(" \xe2\x80"), std::string("caf\xc3"), std::string("\xed\xa0\x80 surrogate"),
                               std::string("\xf4\x90\x80\x80 too big"), std::string("\xc0\xaf overlong"),
                               std::string("  \xfe\xfe  word\t\xff\n")}) {
    INFO("input bytes: " << s.size());
    CHECK(gpt2().decode(gpt2().encode(s)) == s);
  }
  std::mt19937 rng(1234);
  const std::string alphabet = std::string("ab Z9'\t\n\0.,", 11) + "\xc3\xa9\xe2\x80\x94\xf0\x9f\xa4\x96";
  for (int trial = 0; trial < 2000; ++trial) {
    std::string s(rng() % 200, '\0');
    const bool any_byte = trial % 2 == 0;
    for (char& c : s) c = any_byte ? static_cast<char>(rng() & 0xFF) : alphabet[rng() % alphabet.size()];
    const std::vector<int32_t> ids = gpt2().encode(s);
    INFO("trial " << trial);
    REQUIRE(gpt2().decode(ids) == s);
  }
}

TEST_CASE("gpt2 heap merge loop matches the reference loop", "[tokenizer]") {
  std::mt19937 rng(99);
  const std::string letters = "etaoinshrdlu";
  for (int trial = 0; trial < 300; ++trial) {
    std::string piece(1 + rng() % 120, '\0');
    for (char& c : piece) c = trial % 3 == 0 ? static_cast<char>(rng() & 0xFF) : letters[rng() % letters.size()];
    INFO("trial " << trial << ": " << piece);
    REQUIRE(gpt2().bpe(piece, /*reference=*/false) == gpt2().bpe(piece, /*reference=*/true));
  }
  for (const std::string& piece : {std::string(1500, 'a'), std::string(1500, '-'), std::string(1500, ' ')}) {
    CHECK(gpt2().bpe(piece, false) == gpt2().bpe(piece, true));
  }
}

TEST_CASE("gpt2 encodes long runs quickly and exactly", "[tokenizer]") {
  // One regex piece each: the heap keeps these O(n log n).
  for (const char c : {'a', '=', ' ', '7'}) {
    const std::string s(200000, c);
    CHECK(gpt2().decode(gpt2().encode(s)) == s);
  }
  const std::string mixed = std::string(100000, ' ') + "x" + std::string(100000, '\n');
  CHECK(gpt2().decode(gpt2().encode(mixed)) == mixed);
}

TEST_CASE("gpt2 keeps reference semantics when merges are out of order", "[tokenizer]") {
  // "bc b" ranks before "b c", which makes its left half: the heap loop would turn "bcbc" into
  // bcb|c, encoder.py merges every "b c" first and gets bc|bc.
  TempDir dir("order");
  write_tiny_vocab(dir, {"bc", "bcb"}, "bc b\nb c\n");
  const Gpt2Tokenizer tok(dir.path.string());
  CHECK(tok.vocab_size() == 259);
  CHECK(tok.eot_id() == 258);
  CHECK(tok.bpe("bcbc", /*reference=*/true) == std::vector<int32_t>{256, 256});
  CHECK(tok.bpe("bcbc", /*reference=*/false) == std::vector<int32_t>{257, 'c'});
  CHECK(tok.encode("bcbc") == std::vector<int32_t>{256, 256});
  std::string lng;
  for (int i = 0; i < 40; ++i) lng += "bc";  // longer than the heap threshold
  CHECK(tok.encode(lng) == tok.bpe(lng, true));
}

TEST_CASE("gpt2 decode names an out-of-range id", "[tokenizer]") {
  CHECK_THAT(error_message([] { (void)gpt2().decode({15496, 50257}); }),
             Catch::Contains("token id 50257 at position 1 is outside [0, 50257)"));
  CHECK_THAT(error_message([] { (void)gpt2().decode({-1}); }), Catch::Contains("token id -1"));
}

TEST_CASE("gpt2 vocab errors name the file", "[tokenizer]") {
  const std::string missing = (fs::temp_directory_path() / "hetu_no_such_vocab_dir").string();
  CHECK_THAT(hetu::test::usage_error_message([&] { Gpt2Tokenizer tok(missing); }),
             Catch::Contains("vocab directory " + missing + " does not exist"));
  CHECK_THAT(hetu::test::usage_error_message([] { (void)hetu::tokenize::make_tokenizer(hetu::tokenize::TokenizerKind::gpt2, ""); }),
             Catch::Contains("gpt2 tokenizer needs a vocab directory"));

  TempDir dir("errors");
  CHECK_THAT(hetu::test::usage_error_message([&] { Gpt2Tokenizer tok(dir.path.string()); }),
             Catch::Contains("cannot read " + (dir.path / "encoder.json").string()));

  copy_real_vocab(dir);
  dir.write("encoder.json", "{\"a\": 0, ");
  CHECK_THAT(hetu::test::usage_error_message([&] { Gpt2Tokenizer tok(dir.path.string()); }),
             Catch::Contains((dir.path / "encoder.json").string() + ": not valid JSON"));
  dir.write("encoder.json", "[1, 2, 3]");
  CHECK_THAT(hetu::test::usage_error_message([&] { Gpt2Tokenizer tok(dir.path.string()); }),
             Catch::Contains("encoder.json: expected a JSON object mapping token strings to ids, got array"));
  dir.write("encoder.json", "{\"a\": \"zero\"}");
  CHECK_THAT(hetu::test::usage_error_message([&] { Gpt2Tokenizer tok(dir.path.string()); }),
             Catch::Contains("encoder.json: token \"a\": expected an integer id"));
  dir.write("encoder.json", "{\"a\": 0, \"b\": 0}");
  CHECK_THAT(hetu::test::usage_error_message([&] { Gpt2Tokenizer tok(dir.path.string()); }), Catch::Contains("is duplicated"));
  dir.write("encoder.json", "{\"<|endoftext|>\": 0}");
  CHECK_THAT(hetu::test::usage_error_message([&] { Gpt2Tokenizer tok(dir.path.string()); }),
             Catch::Contains("encoder.json: no token for byte 0x00 (U+0100)"));

  fs::remove(dir.path / "encoder.json");
  fs::copy_file(fs::path(kVocabDir) / "encoder.json", dir.path / "encoder.json");
  fs::remove(dir.path / "vocab.bpe");
  CHECK_THAT(hetu::test::usage_error_message([&] { Gpt2Tokenizer tok(dir.path.string()); }),
             Catch::Contains("cannot read " + (dir.path / "vocab.bpe").string()));
  dir.write("vocab.bpe", "#version: 0.2\n\xc4\xa0 t\nxqzxqzxqz t\n");
  CHECK_THAT(hetu::test::usage_error_message([&] { Gpt2Tokenizer tok(dir.path.string()); }),
             Catch::Contains("vocab.bpe:3: unknown symbol \"xqzxqzxqz\" (not in encoder.json)"));
  dir.write("vocab.bpe", "#version: 0.2\nt  h\n");
  CHECK_THAT(hetu::test::usage_error_message([&] { Gpt2Tokenizer tok(dir.path.string()); }),
             Catch::Contains("vocab.bpe:2: expected two symbols separated by one space"));
  dir.write("vocab.bpe", "#version: 0.2\n\xc4\xa0the \xc4\xa0the\n");
  CHECK_THAT(hetu::test::usage_error_message([&] { Gpt2Tokenizer tok(dir.path.string()); }),
             Catch::Contains("vocab.bpe:2: the merge of \"\xc4\xa0the \xc4\xa0the\" is not a token of encoder.json"));
}

TEST_CASE("make_tokenizer builds both kinds", "[tokenizer]") {
  const auto gpt2_tok = hetu::tokenize::make_tokenizer(hetu::tokenize::TokenizerKind::gpt2, kVocabDir);
  CHECK(gpt2_tok->encode("Hello world") == std::vector<int32_t>{15496, 995});
  const auto byte_tok = hetu::tokenize::make_tokenizer(hetu::tokenize::TokenizerKind::byte);
  CHECK(byte_tok->vocab_size() == 256);
}

TEST_CASE("byte tokenizer round trips every byte and rejects ids past 255", "[tokenizer]") {
  const hetu::tokenize::ByteTokenizer tok;
  std::string all(256, '\0');
  for (int b = 0; b < 256; ++b) all[static_cast<size_t>(b)] = static_cast<char>(b);
  const std::vector<int32_t> ids = tok.encode(all);
  REQUIRE(ids.size() == 256);
  CHECK(ids[0] == 0);
  CHECK(ids[255] == 255);
  CHECK(tok.decode(ids) == all);
  CHECK(tok.eot_id() == 0);  // NUL separates documents (text files hold none)
  CHECK_THAT(error_message([&] { (void)tok.decode({65, 256}); }),
             Catch::Contains("id 256 at position 1 is outside [0, 256)"));
  CHECK_THAT(error_message([&] { (void)tok.decode({-3}); }), Catch::Contains("id -3"));
}
