// lib/checkpoint/llmc_checkpoint: a file laid out in the test from llm.c's block order (written
// here, not by the code under test) is read back tensor by tensor; f32 and bf16 round trips;
// and a clear UsageError for each bad header field, a truncated file and trailing bytes.
#include <catch2/catch.hpp>
#include <cstring>

#include "lib/checkpoint/llmc_checkpoint.h"
#include "lib/util/error.h"
#include "tests/temp_dir.h"

using namespace hetu;
using namespace hetu::checkpoint;
using hetu::test::TempDir;

namespace {

constexpr int32_t maxT = 5, V = 7, L = 2, NH = 2, C = 4, Vp = 8;

std::string header(int32_t version = 3, std::vector<int32_t> fields = {maxT, V, L, NH, C, Vp}) {
  std::vector<int32_t> h(256, 0);
  h[0] = 20240326;
  h[1] = version;
  for (size_t i = 0; i < fields.size(); ++i) h[2 + i] = fields[i];
  return std::string(reinterpret_cast<const char*>(h.data()), 1024);
}

// llm.c's 16 blocks and their element counts, from train_gpt2.c's fill_in_parameter_sizes.
std::vector<int64_t> block_sizes() {
  return {Vp * C, maxT * C, L * C,         L * C,     L * 3 * C * C, L * 3 * C, L * C * C, L * C,
          L * C,  L * C,    L * 4 * C * C, L * 4 * C, L * C * 4 * C, L * C,     C,         C};
}

// Element k of the file's parameters is float(k).
std::string f32_file() {
  int64_t total = 0;
  for (int64_t n : block_sizes()) total += n;
  std::vector<float> values(static_cast<size_t>(total));
  for (size_t k = 0; k < values.size(); ++k) values[k] = static_cast<float>(k);
  return header() + std::string(reinterpret_cast<const char*>(values.data()), values.size() * 4);
}

int64_t block_start(int block) {
  int64_t start = 0;
  for (int b = 0; b < block; ++b) start += block_sizes()[static_cast<size_t>(b)];
  return start;
}

std::string parse_error(const std::string& bytes) {
  try {
    parse_llmc_checkpoint(bytes, "m.bin");
  } catch (const UsageError& e) {
    return e.message();
  }
  return "";
}

}  // namespace

TEST_CASE("llmc: a file laid out by hand maps to hetu's GPT-2 tensors", "[io][llmc]") {
  const LlmcCheckpoint c = parse_llmc_checkpoint(f32_file(), "m.bin");
  CHECK(c.header.padded_vocab == Vp);
  CHECK(c.header.vocab == V);
  CHECK(c.tensors.size() == 4 + 12 * L);
  const Tensor& wte = c.tensors.at("wte.weight");
  CHECK(wte.shape() == Shape{Vp, C});
  CHECK(wte.data<float>()[Vp * C - 1] == static_cast<float>(Vp * C - 1));
  // qkvw is block 4, (L, 3C, C): layer 1 starts 3C*C elements in.
  const Tensor& qkv1 = c.tensors.at("h.1.attn.c_attn.weight");
  CHECK(qkv1.shape() == Shape{3 * C, C});
  CHECK(qkv1.data<float>()[0] == static_cast<float>(block_start(4) + 3 * C * C));
  // fcprojw is block 12, (L, C, 4C); element [2][5] of layer 0.
  const Tensor& fcproj0 = c.tensors.at("h.0.mlp.c_proj.weight");
  CHECK(fcproj0.shape() == Shape{C, 4 * C});
  CHECK(fcproj0.data<float>()[2 * 4 * C + 5] == static_cast<float>(block_start(12) + 2 * 4 * C + 5));
  CHECK(c.tensors.at("ln_f.bias").data<float>()[3] == static_cast<float>(block_start(15) + 3));
  CHECK(c.tensors.at("h.1.ln_2.bias").data<float>()[0] == static_cast<float>(block_start(9) + C));
}

TEST_CASE("llmc: f32 and bf16 files round-trip", "[io][llmc]") {
  TempDir dir("llmc_roundtrip");
  const LlmcCheckpoint c = parse_llmc_checkpoint(f32_file(), "m.bin");
  write_llmc_checkpoint(dir.file("a.bin"), c.header, c.tensors, DType::f32);
  const LlmcCheckpoint a = read_llmc_checkpoint(dir.file("a.bin"));
  CHECK(a.header.version == 3);
  for (const auto& [name, t] : c.tensors) {
    CHECK(std::memcmp(a.tensors.at(name).raw_data(), t.raw_data(), static_cast<size_t>(t.numel()) * 4) == 0);
  }
  write_llmc_checkpoint(dir.file("b.bin"), c.header, c.tensors, DType::bf16);
  const LlmcCheckpoint b = read_llmc_checkpoint(dir.file("b.bin"));
  CHECK(b.header.version == 5);
  const Tensor wte = b.tensors.at("wte.weight");
  CHECK(wte.dtype() == DType::bf16);
  CHECK(bf16_to_float(wte.data<bfloat16>()[31].bits) == 31.0f);  // small integers are exact in bf16
  CHECK(bf16_to_float(b.tensors.at("ln_f.weight").data<bfloat16>()[0].bits) ==
        bf16_to_float(float_to_bf16(static_cast<float>(block_start(14)))));
}

TEST_CASE("llmc: bad headers and sizes are refused with clear errors", "[io][llmc]") {
  const std::string good = f32_file();
  CHECK(parse_error(good).empty());
  CHECK_THAT(parse_error("short"), Catch::Contains("too short"));
  std::string magic = good;
  magic[0] = 'x';
  CHECK_THAT(parse_error(magic), Catch::Contains("not an llm.c model file"));
  CHECK_THAT(parse_error(header(1) + good.substr(1024)), Catch::Contains("version 1 is not supported"));
  CHECK_THAT(parse_error(good.substr(0, good.size() - 4)), Catch::Contains("truncated"));
  CHECK_THAT(parse_error(good + "xx"), Catch::Contains("needs exactly"));
  CHECK_THAT(parse_error(header(3, {maxT, V, L, NH, C, V - 1}) + good.substr(1024)),
             Catch::Contains("smaller than vocab_size"));
  CHECK_THAT(parse_error(header(3, {maxT, V, L, 3, C, Vp}) + good.substr(1024)),
             Catch::Contains("not a multiple of num_heads"));
  CHECK_THAT(parse_error(header(3, {maxT, V, 0, NH, C, Vp}) + good.substr(1024)),
             Catch::Contains("num_layers (L) = 0"));
  CHECK_THAT(parse_error(header(3, {maxT, V, 2000000000, NH, 2000000000, 2000000000})),
             Catch::Contains("impossibly large"));
  // bf16 needs half the bytes of f32 for the same header.
  CHECK_THAT(parse_error(header(5) + good.substr(1024)), Catch::Contains("bf16"));
}
