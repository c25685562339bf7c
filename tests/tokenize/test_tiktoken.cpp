// tiktoken-format BPE (lib/tokenize/tiktoken_*): cl100k_base and o200k_base against golden ids
// from js-tiktoken (every id of tests/data/tiktoken/*.golden.jsonl), the built-in patterns and
// special tokens against the reference JSON, round trips of random bytes (invalid UTF-8
// included), the heap merge loop against the quadratic one, the special-token rule, and the
// same ids from N threads as from one.
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "lib/tokenize/tiktoken_tokenizer.h"
#include "lib/tokenize/white_space_pattern.h"
#include "tests/tokenize/tiktoken_test_data.h"

namespace {

using hetu::test::kTiktokenDir;
using hetu::test::tiktoken;

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE("tiktoken reproduces every golden id of cl100k_base and o200k_base", "[tokenizer]") {
  for (const std::string name : {"cl100k", "o200k"}) {
    INFO(name);
    std::ifstream in(kTiktokenDir + "/" + name + "_base.golden.jsonl");
    REQUIRE(in);
    std::string line;
    int lines = 0;
    while (std::getline(in, line)) {
      const nlohmann::json golden = nlohmann::json::parse(line);
      const std::string text = golden["text"];
      const std::vector<int32_t> expected = golden["ids"];
      INFO(text);
      CHECK(tiktoken(name).encode(text) == expected);
      CHECK(tiktoken(name).decode(expected) == text);
      ++lines;
    }
    CHECK(lines == 10);
  }
}

TEST_CASE("tiktoken built-in encodings match the reference pattern and special tokens", "[tokenizer]") {
  for (const std::string name : {"cl100k", "o200k"}) {
    INFO(name);
    const nlohmann::json reference = read_json(kTiktokenDir + "/" + name + "_base.json");
    const hetu::tokenize::TiktokenEncoding& e = hetu::tokenize::builtin_tiktoken_encoding(name);
    CHECK(e.pattern == reference["pat_str"].get<std::string>());
    CHECK(e.special_tokens.size() == reference["special_tokens"].size());
    for (const auto& [text, id] : e.special_tokens) CHECK(reference["special_tokens"][text].get<int32_t>() == id);
    CHECK(&hetu::tokenize::builtin_tiktoken_encoding(name + "_base") == &e);
  }
  CHECK(tiktoken("cl100k").vocab_size() == 100277);
  CHECK(tiktoken("cl100k").eot_id() == 100257);
  CHECK(tiktoken("o200k").vocab_size() == 200019);
  CHECK(tiktoken("o200k").eot_id() == 199999);
}

TEST_CASE("tiktoken white space is Unicode White_Space as in tiktoken", "[tokenizer]") {
  // Ids from the tiktoken package: U+180E is not white space (PCRE2's own \s says it is), U+0085,
  // U+1680, U+2029, U+202F, U+205F, U+3000 are; U+200B is not.
  CHECK(tiktoken("cl100k").encode("a\u180e\n    \n  b") ==
        std::vector<int32_t>{64, 157, 254, 236, 198, 1084, 220, 293});
  CHECK(tiktoken("o200k").encode("a\u180e\n    \n  b") == std::vector<int32_t>{64, 157, 254, 236, 198, 1944, 220, 287});
  CHECK(tiktoken("o200k").encode("x\u200b \u0085y\u2029 \u180e z") ==
        std::vector<int32_t>{87, 3310, 220, 126, 227, 88, 318, 102, 220, 157, 254, 236, 579});
  CHECK(tiktoken("o200k").encode("\u1680\u202f a\u205f\u3000") ==
        std::vector<int32_t>{157, 248, 222, 35971, 261, 37127, 253, 1397});
  CHECK(hetu::tokenize::with_unicode_white_space(R"([^\s\p{L}]+|\s+(?!\S)|[]\s]|\\s)") ==
        R"([^\t-\r\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\p{L}]+|)"
        R"([\t-\r\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}]+)"
        R"((?![^\t-\r\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}])|)"
        R"([]\t-\r\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}]|\\s)");
}

TEST_CASE("tiktoken round trips random bytes including invalid UTF-8", "[tokenizer]") {
  std::mt19937 rng(37);
  for (const std::string name : {"cl100k", "o200k"}) {
    for (int trial = 0; trial < 300; ++trial) {
      std::string text;
      const int length = std::uniform_int_distribution<int>(0, 200)(rng);
      const int mode = trial % 3;  // raw bytes, ASCII-heavy bytes, mixed text with stray bytes
      if (mode == 2) text = hetu::test::random_mixed_text(rng, 20);
      for (int i = 0; i < length; ++i) {
        const int b = mode == 1 ? std::uniform_int_distribution<int>(0, 140)(rng)
                                : std::uniform_int_distribution<int>(0, 255)(rng);
        if (mode == 2) {
          text.insert(std::uniform_int_distribution<size_t>(0, text.size())(rng), 1, static_cast<char>(b));
          if (i > 5) break;
        } else {
          text.push_back(static_cast<char>(b));
        }
      }
      const std::vector<int32_t> ids = tiktoken(name).encode(text);
      for (int32_t id : ids) REQUIRE((id >= 0 && id < 200000));
      REQUIRE(tiktoken(name).decode(ids) == text);
    }
  }
}

TEST_CASE("tiktoken heap merge loop matches the quadratic loop", "[tokenizer]") {
  std::mt19937 rng(11);
  const auto& tok = tiktoken("cl100k");
  for (int trial = 0; trial < 400; ++trial) {
    std::string piece;
    if (trial % 2 == 0) {
      piece = hetu::test::random_mixed_text(rng, 30);
    } else {  // long runs from a small alphabet make many equal-rank pairs
      const int length = std::uniform_int_distribution<int>(1, 300)(rng);
      for (int i = 0; i < length; ++i) piece.push_back("ab \n"[std::uniform_int_distribution<int>(0, 3)(rng)]);
    }
    std::vector<int32_t> quadratic, heap;
    tok.bpe(piece, /*quadratic=*/true, quadratic);
    tok.bpe(piece, /*quadratic=*/false, heap);
    INFO(piece);
    REQUIRE(quadratic == heap);
    REQUIRE(tok.decode(heap) == piece);
  }
  // A long run of one letter and of spaces: the heap loop in encode(), still exact.
  const std::string run(5000, 'a');
  std::vector<int32_t> expected;
  tok.bpe(run, true, expected);
  CHECK(tok.encode(run) == expected);
  const std::string spaces(1 << 20, ' ');
  CHECK(tok.decode(tok.encode(spaces)) == spaces);
}

TEST_CASE("tiktoken special tokens only where the caller allows them", "[tokenizer]") {
  const auto& tok = tiktoken("cl100k");
  const std::string text = "a<|endoftext|>b<|fim_prefix|><|endofprompt|>";
  const std::vector<int32_t> plain = tok.encode(text);
  for (int32_t id : plain) CHECK(id < 100256);
  CHECK(tok.decode(plain) == text);
  CHECK(tok.encode("<|endoftext|>") == std::vector<int32_t>{27, 91, 8862, 728, 428, 91, 29});

  const std::vector<int32_t> special = tok.encode_with_special(text);
  CHECK(special == std::vector<int32_t>{64, 100257, 65, 100258, 100276});
  CHECK(tok.decode(special) == text);
  // Text around a special token is encoded on its own, as tiktoken does.
  CHECK(tok.encode_with_special("hello<|endoftext|> world") ==
        std::vector<int32_t>{15339, 100257, 1917});
  CHECK(tok.encode_with_special("<|endoftext") == tok.encode("<|endoftext"));
  CHECK(tiktoken("o200k").encode_with_special("<|endofprompt|>") == std::vector<int32_t>{200018});
}

TEST_CASE("tiktoken gives the same ids from N threads as from one", "[tokenizer]") {
  std::mt19937 rng(5);
  std::vector<std::string> texts;
  for (int i = 0; i < 64; ++i) texts.push_back(hetu::test::random_mixed_text(rng, 200));
  for (const std::string name : {"cl100k", "o200k"}) {
    const auto& tok = tiktoken(name);
    std::vector<std::vector<int32_t>> serial;
    for (const std::string& t : texts) serial.push_back(tok.encode(t));
    constexpr int kThreads = 4;
    std::vector<std::vector<std::vector<int32_t>>> parallel(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int round = 0; round < 3; ++round) {
          for (size_t i = 0; i < texts.size(); ++i) {
            const size_t k = (i + static_cast<size_t>(t) * 7) % texts.size();  // different orders
            if (round == 0) parallel[t].resize(texts.size());
            parallel[t][k] = tok.encode(texts[k]);
          }
        }
      });
    }
    for (std::thread& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) CHECK(parallel[t] == serial);
  }
}
