// Tests for lib/dataset/token_shard: the file layout checked byte by byte (read back here with
// ifstream, not with TokenShard), every corrupt form with its message, and
// prepare_token_shards() on temp files: counts, the val/train split, eot prefixes, refusal to
// overwrite, and cleanup after a failure.
#include "lib/dataset/token_shard.h"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <type_traits>

#include "lib/tokenize/tokenizer.h"
#include "lib/util/error.h"
#include "tests/temp_dir.h"

namespace fs = std::filesystem;
using namespace hetu;
using namespace hetu::dataset;
using namespace hetu::tokenize;

namespace {

using hetu::test::TempDir;

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

int32_t header_int(const std::string& bytes, int i) {
  int32_t v = 0;
  std::memcpy(&v, bytes.data() + 4 * i, 4);
  return v;
}

// The tokens of a shard file, decoded here from the bytes: little-endian uint16 after 1024 bytes.
std::vector<int32_t> file_tokens(const std::string& path) {
  const std::string bytes = read_bytes(path);
  std::vector<int32_t> out;
  for (size_t i = 1024; i + 1 < bytes.size(); i += 2) {
    out.push_back(static_cast<unsigned char>(bytes[i]) | (static_cast<unsigned char>(bytes[i + 1]) << 8));
  }
  return out;
}

// A file with the given first three header ints (the rest zero) and `payload` raw bytes.
void write_raw(const std::string& path, int32_t magic, int32_t version, int32_t count, size_t payload) {
  std::string bytes(1024 + payload, '\x07');
  std::memset(bytes.data(), 0, 1024);
  const int32_t head[3] = {magic, version, count};
  std::memcpy(bytes.data(), head, sizeof(head));
  std::ofstream(path, std::ios::binary) << bytes;
}

std::vector<int32_t> bytes_of(const std::string& text) {
  std::vector<int32_t> out;
  for (unsigned char c : text) out.push_back(c);
  return out;
}

// Byte ids, with a chosen eot id (the byte tokenizer has none), except that '~' becomes 70000.
class EotByteTokenizer final : public Tokenizer {
 public:
  explicit EotByteTokenizer(int32_t eot, int32_t tilde = 70000) : eot_(eot), tilde_(tilde) {}
  std::vector<int32_t> encode(std::string_view text) const override {
    std::vector<int32_t> ids = bytes_of(std::string(text));
    for (int32_t& id : ids) id = id == '~' ? tilde_ : id;
    return ids;
  }
  std::string decode(const std::vector<int32_t>&) const override { return {}; }
  int64_t vocab_size() const override { return 70001; }
  int32_t eot_id() const override { return eot_; }

 private:
  int32_t eot_, tilde_;
};

}  // namespace

TEST_CASE("write_token_shard writes the llm.c layout and TokenShard reads it back", "[token_shard]") {
  TempDir dir("round_trip");
  const std::vector<int32_t> tokens = {0, 1, 255, 256, 50256, 65535, 42};
  const std::string path = dir.file("a.bin");
  write_token_shard(path, tokens);

  const std::string bytes = read_bytes(path);
  REQUIRE(bytes.size() == 1024 + 2 * tokens.size());
  CHECK(header_int(bytes, 0) == 20240520);
  CHECK(header_int(bytes, 1) == 1);
  CHECK(header_int(bytes, 2) == 7);
  for (int i = 3; i < 256; ++i) CHECK(header_int(bytes, i) == 0);
  CHECK(file_tokens(path) == tokens);
  CHECK(static_cast<unsigned char>(bytes[1024 + 2 * 4]) == 0x50);  // 50256 = 0xc450, low byte first
  CHECK(static_cast<unsigned char>(bytes[1024 + 2 * 4 + 1]) == 0xc4);

  const TokenShard shard(path);
  CHECK(shard.path() == path);
  REQUIRE(shard.size() == 7);
  CHECK(shard.version() == 1);
  for (int64_t i = 0; i < 7; ++i) {
    CHECK(shard.token(i) == tokens[static_cast<size_t>(i)]);
    CHECK(shard[i] == tokens[static_cast<size_t>(i)]);
  }
  CHECK_THROWS_WITH(shard.token(7), Catch::Contains("token index 7 is outside [0, 7)"));
  CHECK_THROWS_AS(shard.token(-1), Error);

  // Rewriting replaces the whole file and leaves no temp file behind.
  write_token_shard(path, {});
  CHECK(read_bytes(path).size() == 1024);
  CHECK(TokenShard(path).size() == 0);
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator{}) == 1);
}

TEST_CASE("TokenShard is move-only and moving keeps the mapping", "[token_shard]") {
  static_assert(!std::is_copy_constructible_v<TokenShard> && !std::is_copy_assignable_v<TokenShard>);
  static_assert(std::is_nothrow_move_constructible_v<TokenShard> && std::is_nothrow_move_assignable_v<TokenShard>);
  TempDir dir("move");
  write_token_shard(dir.file("a.bin"), {1, 2, 3});
  write_token_shard(dir.file("b.bin"), {9});
  TokenShard a(dir.file("a.bin"));
  TokenShard moved(std::move(a));
  CHECK(moved.size() == 3);
  CHECK(moved.token(2) == 3);
  CHECK(a.size() == 0);  // NOLINT(bugprone-use-after-move): a moved-from shard is empty
  TokenShard b(dir.file("b.bin"));
  b = std::move(moved);  // unmaps b.bin's mapping, takes a.bin's
  CHECK(b.size() == 3);
  CHECK(b.token(0) == 1);
  CHECK(b.path() == dir.file("a.bin"));
}

TEST_CASE("ids past 65535 make a version-2 shard of uint32 tokens, read back as written", "[token_shard]") {
  TempDir dir("wide");
  const std::vector<int32_t> tokens = {100257, 0, 65535, 65536, 128001, 7, 2147483647};
  const std::string path = dir.file("w.bin");
  write_token_shard(path, tokens, /*separator=*/100257);
  const std::string bytes = read_bytes(path);
  REQUIRE(bytes.size() == 1024 + 4 * tokens.size());
  CHECK(header_int(bytes, 1) == 2);
  CHECK(header_int(bytes, 2) == 7);
  CHECK(header_int(bytes, 4) == 100257);
  std::vector<int32_t> decoded;  // little-endian uint32 after the header, decoded here
  for (size_t i = 1024; i + 3 < bytes.size(); i += 4) {
    uint32_t v = 0;
    for (int b = 3; b >= 0; --b) v = (v << 8) | static_cast<unsigned char>(bytes[i + static_cast<size_t>(b)]);
    decoded.push_back(static_cast<int32_t>(v));
  }
  CHECK(decoded == tokens);
  const TokenShard shard(path);
  CHECK(shard.version() == 2);
  CHECK(shard.separator() == 100257);
  REQUIRE(shard.size() == 7);
  for (int64_t i = 0; i < 7; ++i) CHECK(shard[i] == tokens[static_cast<size_t>(i)]);
  std::vector<int32_t> some(3);
  shard.copy(2, 3, some.data());
  CHECK(some == std::vector<int32_t>{65535, 65536, 128001});
  // One id below 65536 less keeps the narrow format.
  write_token_shard(path, {100, 65535});
  CHECK(TokenShard(path).version() == 1);
  CHECK(read_bytes(path).size() == 1024 + 4);
}

TEST_CASE("write_token_shard rejects negative ids and names the id", "[token_shard]") {
  TempDir dir("bad_ids");
  const std::string path = dir.file("x.bin");
  CHECK_THROWS_AS(write_token_shard(path, {1, 2, -3}), UsageError);
  CHECK_THROWS_WITH(write_token_shard(path, {1, 2, -3}),
                    path + ": token id -3 at position 2 is not a token id (ids are >= 0)");
  CHECK_THROWS_WITH(write_token_shard(path, {-1}), Catch::Contains("token id -1 at position 0"));
  CHECK_FALSE(fs::exists(path));
  CHECK(fs::is_empty(dir.path));
}

TEST_CASE("corrupt token shards are UsageErrors naming the file and the fault", "[token_shard]") {
  TempDir dir("corrupt");
  const std::string path = dir.file("x.bin");
  auto message = [&] {
    try {
      TokenShard shard(path);
    } catch (const UsageError& error) {
      return error.message();
    }
    return std::string("no error");
  };

  write_raw(path, 123, 1, 0, 0);
  CHECK(message() == path + ": bad magic 123 (expected 20240520): not an llm.c token shard");

  write_raw(path, 20240520, 3, 4, 16);
  CHECK(message() == path + ": unsupported version 3 (expected 1: uint16 tokens, or 2: uint32 tokens)");

  write_raw(path, 20240520, 1, 1000, 2 * 412);  // truncated
  CHECK(message() == path + ": header says 1000 tokens but the file holds 412 (1848 bytes; a 1000-token version-1 "
                            "shard is 3024 bytes)");

  write_raw(path, 20240520, 1, 3, 2 * 5);  // extra bytes
  CHECK(message() ==
        path + ": header says 3 tokens but the file holds 5 (1034 bytes; a 3-token version-1 shard is 1030 bytes)");

  write_raw(path, 20240520, 2, 4, 2 * 4);  // version 2 sized as version 1: uint32 tokens take 4 bytes
  CHECK(message() ==
        path + ": header says 4 tokens but the file holds 2 (1032 bytes; a 4-token version-2 shard is 1040 bytes)");

  write_raw(path, 20240520, 1, 3, 2 * 3 + 1);  // one stray byte
  CHECK_THAT(message(), Catch::StartsWith(path + ": header says 3 tokens but the file holds 3 and stray bytes"));

  write_raw(path, 20240520, 1, -5, 0);
  CHECK(message() == path + ": header says -5 tokens: not an llm.c token shard");

  std::ofstream(path, std::ios::binary | std::ios::trunc) << "hello world\n";
  CHECK(message() == path + ": 12 bytes, shorter than the 1024-byte header: not an llm.c token shard");

  fs::remove(path);
  CHECK_THAT(message(), Catch::StartsWith("cannot open " + path + ": "));
  CHECK_THAT([&] {
    try {
      TokenShard shard(dir.path.string());
    } catch (const UsageError& error) {
      return error.message();
    }
    return std::string("no error");
  }(), Catch::Equals(dir.path.string() + ": not a regular file"));
}

TEST_CASE("prepare_token_shards splits the token stream into val and train shards", "[token_shard]") {
  TempDir dir("prepare");
  const std::string a = dir.file("a.txt"), b = dir.file("b.txt"), out = dir.file("out");
  std::ofstream(a) << "hello";
  std::ofstream(b) << " world!";
  const auto tokenizer = make_tokenizer(TokenizerKind::byte);

  const PrepareSummary summary = prepare_token_shards(*tokenizer, {a, b}, out, 4, 3);
  CHECK(summary.documents == 2);
  CHECK(summary.tokens == 14);
  CHECK(summary.val_tokens == 4);
  CHECK(summary.train_tokens == 10);
  const std::vector<std::string> names = {"val_000000.bin", "train_000000.bin", "train_000001.bin",
                                          "train_000002.bin", "train_000003.bin"};
  REQUIRE(summary.files.size() == names.size());
  for (size_t i = 0; i < names.size(); ++i) CHECK(summary.files[i] == (fs::path(out) / names[i]).string());
  // The byte tokenizer's separator is 0 (NUL): the stream is each file's bytes after a 0.
  const std::string nul(1, '\0');
  CHECK(file_tokens(summary.files[0]) == bytes_of(nul + "hel"));
  CHECK(file_tokens(summary.files[1]) == bytes_of("lo" + nul));
  CHECK(file_tokens(summary.files[2]) == bytes_of(" wo"));
  CHECK(file_tokens(summary.files[3]) == bytes_of("rld"));
  CHECK(file_tokens(summary.files[4]) == bytes_of("!"));
  for (const std::string& file : summary.files) CHECK(TokenShard(file).separator() == 0);  // recorded in the header
  CHECK(std::distance(fs::directory_iterator(out), fs::directory_iterator{}) == 5);

  // No val split: everything is training data.
  const PrepareSummary all = prepare_token_shards(*tokenizer, {a}, dir.file("out_all"), 0, 100);
  REQUIRE(all.files.size() == 1);
  CHECK(fs::path(all.files[0]).filename() == "train_000000.bin");
  CHECK(file_tokens(all.files[0]) == bytes_of(nul + "hello"));
}

TEST_CASE("prepare_token_shards starts a document at every line --document-start matches", "[token_shard]") {
  TempDir dir("prepare_documents");
  const std::string a = dir.file("a.txt"), nul_file = dir.file("nul.txt");
  std::ofstream(a) << "intro\nGenesis 1\nverse\nmore\nExodus 1\nlast";
  const auto tokenizer = make_tokenizer(TokenizerKind::byte);
  const PrepareSummary summary =
      prepare_token_shards(*tokenizer, {a}, dir.file("out"), 0, 1000, "^[A-Z][a-z]+ [0-9]+$");
  CHECK(summary.documents == 3);
  CHECK(summary.separator == 0);
  const std::string nul(1, '\0');
  CHECK(file_tokens(summary.files[0]) == bytes_of(nul + "intro\n" + nul + "Genesis 1\nverse\nmore\n" + nul + "Exodus 1\nlast"));
  // Text holding the separator itself would fake a boundary: refused, naming the input.
  std::ofstream(nul_file) << "a" << nul << "b";
  CHECK_THROWS_WITH(prepare_token_shards(*tokenizer, {nul_file}, dir.file("out_nul"), 0, 1000),
                    Catch::Contains(nul_file + ": document 1 encodes to the document separator id 0 (token 1)"));
  CHECK_THROWS_WITH(prepare_token_shards(*tokenizer, {a}, dir.file("out_bad"), 0, 1000, "(["),
                    Catch::Contains("--document-start '([' is not a regular expression"));
}

TEST_CASE("prepare_token_shards prefixes every document with the eot id", "[token_shard]") {
  TempDir dir("prepare_eot");
  const std::string a = dir.file("a.txt"), b = dir.file("b.txt"), empty = dir.file("empty.txt");
  std::ofstream(a) << "ab";
  std::ofstream(b) << "c";
  std::ofstream(empty) << "";
  const EotByteTokenizer tokenizer(300);
  const PrepareSummary summary = prepare_token_shards(tokenizer, {a, empty, b}, dir.file("out"), 0, 1000);
  CHECK(summary.documents == 3);
  CHECK(summary.tokens == 6);
  REQUIRE(summary.files.size() == 1);
  CHECK(file_tokens(summary.files[0]) == std::vector<int32_t>{300, 'a', 'b', 300, 300, 'c'});
}

TEST_CASE("prepare_token_shards refuses a folder that holds shards and leaves it untouched", "[token_shard]") {
  TempDir dir("prepare_refuse");
  const std::string a = dir.file("a.txt"), out = dir.file("out");
  std::ofstream(a) << "some text";
  const auto tokenizer = make_tokenizer(TokenizerKind::byte);
  prepare_token_shards(*tokenizer, {a}, out, 2, 4);
  const std::string before = read_bytes(dir.file("out/val_000000.bin"));

  CHECK_THROWS_AS(prepare_token_shards(*tokenizer, {a}, out, 2, 4), UsageError);
  CHECK_THROWS_WITH(prepare_token_shards(*tokenizer, {a}, out, 0, 100),
                    "data prepare: " + out +
                        " already holds 3 .bin files (train_000000.bin, ...); refusing to overwrite: choose an empty "
                        "folder or remove them");
  CHECK(read_bytes(dir.file("out/val_000000.bin")) == before);
  CHECK(std::distance(fs::directory_iterator(out), fs::directory_iterator{}) == 3);

  // Any other .bin file counts too; other files do not.
  const std::string other = dir.file("other");
  fs::create_directories(other);
  std::ofstream(other + "/notes.txt") << "x";
  CHECK_NOTHROW(prepare_token_shards(*tokenizer, {a}, other, 0, 100));
  const std::string foreign = dir.file("foreign");
  fs::create_directories(foreign);
  std::ofstream(foreign + "/weights.bin") << "x";
  CHECK_THROWS_WITH(prepare_token_shards(*tokenizer, {a}, foreign, 0, 100),
                    Catch::Contains(foreign + " already holds 1 .bin file (weights.bin)"));
}

TEST_CASE("prepare_token_shards writes ids past 65535 into version-2 shards", "[token_shard]") {
  TempDir dir("prepare_wide");
  const std::string a = dir.file("a.txt"), out = dir.file("out");
  std::ofstream(a) << "ab~c";
  const EotByteTokenizer wide(70001);  // the separator and '~' (70000) need 32 bits
  const PrepareSummary s = prepare_token_shards(wide, {a}, out, 0, 100);
  REQUIRE(s.files.size() == 1);
  const TokenShard shard(s.files[0]);
  CHECK(shard.version() == 2);
  CHECK(shard.separator() == 70001);
  std::vector<int32_t> got(static_cast<size_t>(shard.size()));
  shard.copy(0, shard.size(), got.data());
  CHECK(got == std::vector<int32_t>{70001, 'a', 'b', 70000, 'c'});
}

TEST_CASE("prepare_token_shards leaves no shard behind when it fails", "[token_shard]") {
  TempDir dir("prepare_fail");
  const std::string a = dir.file("a.txt"), out = dir.file("out");
  std::ofstream(a) << "0123456789";
  const auto tokenizer = make_tokenizer(TokenizerKind::byte);

  // Every token (the separator and 10 bytes) is taken by val: nothing is left for training.
  CHECK_THROWS_WITH(prepare_token_shards(*tokenizer, {a}, out, 11, 4),
                    "data prepare: the inputs hold 11 tokens and --val-tokens takes 11: none are left for training");
  CHECK_FALSE(fs::exists(out));  // the folder it made is removed too; one that existed stays
  fs::create_directories(out);
  CHECK_THROWS(prepare_token_shards(*tokenizer, {a}, out, 11, 4));
  CHECK(fs::is_empty(out));
  CHECK_THROWS_WITH(prepare_token_shards(*tokenizer, {a}, out, 50, 4),
                    Catch::Contains("the inputs hold 11 tokens and --val-tokens takes 50"));

  // A missing input is found before anything is written.
  CHECK_THROWS_WITH(prepare_token_shards(*tokenizer, {a, dir.file("missing.txt")}, out, 0, 4),
                    "data prepare: " + dir.file("missing.txt") + ": no such file");
  CHECK(fs::is_empty(out));

  // A negative id: in the first document...
  const std::string b = dir.file("b.txt");
  std::ofstream(b) << "ok~";
  const EotByteTokenizer negative_text(70000, -7);
  CHECK_THROWS_WITH(prepare_token_shards(negative_text, {b}, out, 0, 2),
                    "data prepare: " + b + ": the tokenizer produced id -7, not a token id (ids are >= 0)");
  CHECK(fs::is_empty(out));
  // ...or in the second document, after the first filled 5 shards: they are removed again.
  CHECK_THROWS_WITH(prepare_token_shards(negative_text, {a, b}, out, 2, 2),
                    Catch::StartsWith("data prepare: " + b + ": the tokenizer produced id -7"));
  CHECK(fs::is_empty(out));

  CHECK_THROWS_WITH(prepare_token_shards(*tokenizer, {a}, out, 0, 0),
                    Catch::Contains("--shard-tokens must be in [1, 2147483647], got 0"));
  CHECK_THROWS_WITH(prepare_token_shards(*tokenizer, {a}, out, -1, 4), Catch::Contains("--val-tokens must be >= 0"));
  CHECK_THROWS_WITH(prepare_token_shards(*tokenizer, {}, out, 0, 4), "data prepare: no input files");
  CHECK_THROWS_WITH(prepare_token_shards(*tokenizer, {"-", "-"}, out, 0, 4),
                    Catch::Contains("stdin ('-') given twice"));
}
