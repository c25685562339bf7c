// lib/checkpoint/safetensors and safetensors_index: bitwise round trips of every dtype, a file made
// byte by byte in the test and read back, the on-disk layout, and one rejection per
// invariant of the untrusted-input reader (each a UsageError naming the file and tensor).
// Sharded folders: splitting, the index, and refusal of inconsistent indexes.
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "lib/checkpoint/safetensors.h"
#include "lib/checkpoint/safetensors_index.h"
#include "lib/util/error.h"
#include "tests/temp_dir.h"

using namespace hetu;
using namespace hetu::checkpoint;
using hetu::test::TempDir;
namespace fs = std::filesystem;

namespace {

// 8-byte little-endian length + header text + data.
std::string st_file(const std::string& header, const std::string& data = "") {
  std::string out(8, '\0');
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return out + header + data;
}

Tensor pattern(const Shape& shape, DType dtype, unsigned seed) {
  Tensor t = empty(shape, dtype);
  auto* bytes = static_cast<unsigned char*>(t.raw_data());
  for (size_t i = 0; i < static_cast<size_t>(t.numel()) * dtype_size(dtype); ++i)
    bytes[i] = static_cast<unsigned char>(i * 37 + seed);
  return t;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return a.numel() == 0 ||
         std::memcmp(ca.raw_data(), cb.raw_data(), static_cast<size_t>(a.numel()) * dtype_size(a.dtype())) == 0;
}

// The UsageError message of parsing `bytes` ("" when it parses).
std::string parse_error(const std::string& bytes) {
  try {
    parse_safetensors(bytes, "bad.safetensors");
  } catch (const UsageError& e) {
    return e.message();
  }
  return "";
}

const std::string kOne = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";

}  // namespace

TEST_CASE("safetensors: a file written by hand is read back", "[io][safetensors]") {
  float values[2] = {1.5f, -2.0f};
  const std::string data(reinterpret_cast<const char*>(values), 8);
  const std::string bytes =
      st_file(R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
              R"("b":{"dtype":"I64","shape":[],"data_offsets":[8,16]}})",
              data + std::string("\x07\0\0\0\0\0\0\0", 8));
  const SafetensorsHeader h = parse_safetensors(bytes, "hand.safetensors");
  REQUIRE(h.entries.size() == 2);
  CHECK(h.metadata.at("format") == "pt");
  const Tensor a = safetensors_tensor(bytes, h, *h.find("a"));
  CHECK(a.shape() == Shape{2});
  CHECK(a.data<float>()[0] == 1.5f);
  CHECK(a.data<float>()[1] == -2.0f);
  const Tensor b = safetensors_tensor(bytes, h, *h.find("b"));
  CHECK(b.dim() == 0);
  CHECK(b.data<int64_t>()[0] == 7);
}

TEST_CASE("safetensors: every dtype round-trips bitwise through a file", "[io][safetensors]") {
  TempDir dir("safetensors_roundtrip");
  std::vector<std::pair<std::string, Tensor>> tensors;
  unsigned seed = 1;
  for (DType d : {DType::f32, DType::f64, DType::bf16, DType::f16, DType::i32, DType::i64, DType::u8}) {
    tensors.emplace_back(std::string("t.") + std::string(to_string(d)), pattern({3, 5}, d, seed++));
  }
  tensors.emplace_back("transposed", pattern({4, 3}, DType::f32, 9).transpose(0, 1));  // not contiguous
  tensors.emplace_back("empty", empty({0, 7}, DType::f32));
  tensors.emplace_back("scalar", pattern({}, DType::f64, 3));
  write_safetensors(dir.file("x.safetensors"), tensors, {{"format", "pt"}, {"note", "é ünïcode"}});

  SafetensorsReader reader(dir.file("x.safetensors"));
  CHECK(reader.header().metadata.at("note") == "é ünïcode");
  CHECK(reader.header().data_start % 8 == 0);
  const std::map<std::string, Tensor> back = reader.read_all();
  REQUIRE(back.size() == tensors.size());
  for (const auto& [name, t] : tensors) CHECK(same_bytes(back.at(name), t));

  // The header is plain JSON that another reader understands.
  std::ifstream in(dir.file("x.safetensors"), std::ios::binary);
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  std::string text(n, '\0');
  in.read(text.data(), static_cast<std::streamsize>(n));
  const auto j = nlohmann::json::parse(text);
  CHECK(j["t.bf16"]["dtype"] == "BF16");
  CHECK(j["transposed"]["shape"] == nlohmann::json::array({3, 4}));
}

TEST_CASE("safetensors: rejects malformed headers with clear errors", "[io][safetensors]") {
  CHECK(parse_error(st_file(kOne, std::string(8, '\0'))).empty());
  CHECK_THAT(parse_error("abc"), Catch::Contains("too short"));
  std::string huge = st_file("{}");
  huge[5] = 0x10;  // length ~ 2^40
  CHECK_THAT(parse_error(huge), Catch::Contains("exceeds the 100000000-byte limit"));
  std::string past = st_file(kOne, std::string(8, '\0'));
  past[0] = static_cast<char>(200);
  CHECK_THAT(parse_error(past), Catch::Contains("runs past the end of the file"));
  CHECK_THAT(parse_error(st_file("{\"a\":", "")), Catch::Contains("not valid JSON"));
  CHECK_THAT(parse_error(st_file("[1,2]")), Catch::Contains("not an object"));
  CHECK_THAT(parse_error(st_file(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"a":{}})")),
             Catch::Contains("duplicate key \"a\""));
  CHECK_THAT(parse_error(st_file(std::string(100000, '[') + std::string(100000, ']'))),
             Catch::Contains("nested deeper"));
  CHECK_THAT(parse_error(st_file("{\"\xff\":1}")), Catch::Contains("not valid JSON"));
  CHECK_THAT(parse_error(st_file(R"({"__metadata__":[1]})")), Catch::Contains("__metadata__ is not an object"));
  CHECK_THAT(parse_error(st_file(R"({"__metadata__":{"k":1}})")),
             Catch::Contains("__metadata__ \"k\" is not a string"));
  CHECK_THAT(parse_error(st_file(R"({"":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}})")),
             Catch::Contains("empty name"));
}

TEST_CASE("safetensors: rejects inconsistent tensor entries and names the tensor", "[io][safetensors]") {
  auto entry = [](const std::string& body, size_t data = 8) {
    return parse_error(st_file("{\"w\":" + body + "}", std::string(data, '\0')));
  };
  CHECK_THAT(entry("3"), Catch::Contains("tensor \"w\": expected an object"));
  CHECK_THAT(entry(R"({"dtype":"F8_E4M3","shape":[8],"data_offsets":[0,8]})"),
             Catch::Contains("dtype \"F8_E4M3\" is not one"));
  CHECK_THAT(entry(R"({"dtype":7,"shape":[2],"data_offsets":[0,8]})"),
             Catch::Contains("dtype missing or not a string"));
  CHECK_THAT(entry(R"({"dtype":"F32","data_offsets":[0,8]})"), Catch::Contains("shape missing"));
  CHECK_THAT(entry(R"({"dtype":"F32","shape":[-2],"data_offsets":[0,8]})"), Catch::Contains("non-negative integer"));
  CHECK_THAT(entry(R"({"dtype":"F32","shape":[2.0],"data_offsets":[0,8]})"), Catch::Contains("non-negative integer"));
  CHECK_THAT(entry(R"({"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,2],"data_offsets":[0,8]})"),
             Catch::Contains("17 dimensions"));
  CHECK_THAT(entry(R"({"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]})"),
             Catch::Contains("too large"));
  CHECK_THAT(entry(R"({"dtype":"F32","shape":[2],"data_offsets":[0]})"), Catch::Contains("data_offsets missing"));
  CHECK_THAT(entry(R"({"dtype":"F32","shape":[2],"data_offsets":[8,0]})"), Catch::Contains("begin after end"));
  CHECK_THAT(entry(R"({"dtype":"F32","shape":[3],"data_offsets":[0,8]})"), Catch::Contains("need 12"));
  CHECK_THAT(entry(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})", 4),
             Catch::Contains("runs past the end of the data"));
  CHECK_THAT(entry(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})", 12),
             Catch::Contains("4 bytes after the last tensor"));
  CHECK_THAT(entry(R"({"dtype":"F32","shape":[1],"data_offsets":[4,8]})"), Catch::Contains("leaving a hole"));
  const std::string overlap =
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
  CHECK_THAT(parse_error(st_file(overlap, std::string(8, '\0'))),
             Catch::Contains("tensor \"b\" (bytes 4..8) overlaps tensor \"a\""));
  CHECK_THAT(parse_error(st_file(kOne, std::string(8, '\0'))), Catch::Equals(""));
}

TEST_CASE("safetensors: the reader names missing and short and non-regular files", "[io][safetensors]") {
  TempDir dir("safetensors_files");
  CHECK_THROWS_WITH(SafetensorsReader(dir.file("none.safetensors")), Catch::Contains("cannot open"));
  CHECK_THROWS_AS(SafetensorsReader(dir.file()), UsageError);
  dir.write("short.safetensors", st_file(kOne, "abc"));
  CHECK_THROWS_WITH(SafetensorsReader(dir.file("short.safetensors")),
                    Catch::Contains("short.safetensors: tensor \"a\"") && Catch::Contains("truncated"));
}

TEST_CASE("safetensors: folders are sharded above the limit with an index", "[io][safetensors]") {
  TempDir dir("safetensors_shards");
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (int i = 0; i < 5; ++i)
    tensors.emplace_back("w" + std::to_string(i), pattern({10}, DType::f32, static_cast<unsigned>(i)));
  // 40 bytes each, 100-byte shards: 2 + 2 + 1.
  const std::vector<std::string> files = write_safetensors_folder(dir.file(), tensors, {{"format", "pt"}}, 100);
  CHECK(files == std::vector<std::string>{"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
                                          "model-00003-of-00003.safetensors", "model.safetensors.index.json"});
  std::ifstream index_in(dir.file("model.safetensors.index.json"));
  const auto index = nlohmann::json::parse(index_in);
  CHECK(index["metadata"]["total_size"] == 200);
  CHECK(index["weight_map"]["w4"] == "model-00003-of-00003.safetensors");
  const SafetensorsFolder back = read_safetensors_folder(dir.file());
  CHECK(back.files.size() == 3);
  CHECK(back.metadata.at("format") == "pt");
  for (const auto& [name, t] : tensors) CHECK(same_bytes(back.tensors.at(name), t));

  // One file when everything fits; a single file can be named directly.
  TempDir one("safetensors_single");
  CHECK(write_safetensors_folder(one.file(), tensors, {}, 1000) == std::vector<std::string>{"model.safetensors"});
  CHECK(read_safetensors_folder(one.file("model.safetensors")).tensors.size() == 5);
}

TEST_CASE("safetensors: inconsistent indexes are refused", "[io][safetensors]") {
  TempDir dir("safetensors_bad_index");
  std::vector<std::pair<std::string, Tensor>> tensors = {{"a", pattern({4}, DType::f32, 1)},
                                                         {"b", pattern({4}, DType::f32, 2)}};
  write_safetensors_folder(dir.file(), tensors, {}, 16);
  const std::string s1 = "model-00001-of-00002.safetensors", s2 = "model-00002-of-00002.safetensors";
  auto with_index = [&](const std::string& weight_map) {
    dir.write("model.safetensors.index.json", R"({"metadata":{},"weight_map":)" + weight_map + "}");
    try {
      read_safetensors_folder(dir.file());
    } catch (const UsageError& e) {
      return e.message();
    }
    return std::string();
  };
  CHECK(with_index(R"({"a":")" + s1 + R"(","b":")" + s2 + R"("})").empty());
  CHECK_THAT(with_index(R"({"a":"../x.safetensors","b":")" + s2 + R"("})"),
             Catch::Contains("not a plain *.safetensors file name"));
  CHECK_THAT(with_index(R"({"a":"model-00009-of-00009.safetensors","b":")" + s2 + R"("})"),
             Catch::Contains("not in the folder"));
  CHECK_THAT(with_index(R"({"a":")" + s2 + R"(","b":")" + s1 + R"("})"), Catch::Contains("places in"));
  CHECK_THAT(with_index(R"({"a":")" + s1 + R"(","x":")" + s2 + R"("})"),
             Catch::Contains("holds tensor \"b\", which") && Catch::Contains("does not list"));
  CHECK_THAT(with_index(R"({"a":")" + s1 + R"(","b":")" + s2 + R"(","c":")" + s2 + R"("})"),
             Catch::Contains("tensor \"c\" is missing"));
  CHECK_THAT(with_index("[]"), Catch::Contains("weight_map"));
}
