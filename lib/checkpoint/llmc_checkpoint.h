// llm.c GPT-2 checkpoints (karpathy/llm.c's gpt2_124M.bin, written by its train_gpt2.py):
// a header of 256 little-endian int32 — magic 20240326, version (3: f32, 5: bf16), maxT, V,
// L, NH, C, Vp — then every parameter in one fixed order, each block stacked over layers:
//   wte (Vp, C)  wpe (maxT, C)  ln1w ln1b (L, C)  qkvw (L, 3C, C)  qkvb (L, 3C)
//   attprojw (L, C, C)  attprojb (L, C)  ln2w ln2b (L, C)  fcw (L, 4C, C)  fcb (L, 4C)
//   fcprojw (L, C, 4C)  fcprojb (L, C)  lnfw lnfb (C)
// Weights are (out, in) like torch.nn.Linear; qkvw rows are q, then k, then v. Nothing
// follows the parameters. Here the tensors carry hetu's per-layer GPT-2 names
// ("wte.weight", "h.3.attn.c_attn.weight", ...), in the file's dtype.
//
//   LlmcCheckpoint c = read_llmc_checkpoint("gpt2_124M.bin");   // c.header.padded_vocab == 50304
//   write_llmc_checkpoint("copy.bin", c.header, c.tensors, DType::bf16);  // version 5
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/core/tensor.h"

namespace hetu::checkpoint {

inline constexpr int32_t kLlmcMagic = 20240326;
inline constexpr int32_t kLlmcVersionF32 = 3;
inline constexpr int32_t kLlmcVersionBf16 = 5;

struct LlmcHeader {
  int32_t version = kLlmcVersionF32;
  int64_t max_seq_len = 0;   // maxT
  int64_t vocab = 0;         // V
  int64_t layers = 0;        // L
  int64_t heads = 0;         // NH
  int64_t channels = 0;      // C
  int64_t padded_vocab = 0;  // Vp >= V
};

struct LlmcCheckpoint {
  LlmcHeader header;
  std::map<std::string, Tensor> tensors;  // hetu GPT-2 names, f32 (version 3) or bf16 (version 5)
};

// The parameters of a GPT-2 of this header, in the file's order: hetu name and shape.
std::vector<std::pair<std::string, Shape>> llmc_parameters(const LlmcHeader& header);

// Reads a file (UsageError naming it for a bad magic, version, header field or size).
LlmcCheckpoint read_llmc_checkpoint(const std::string& path);
LlmcCheckpoint parse_llmc_checkpoint(std::string_view bytes, const std::string& file);

// Writes header + parameters (converted to f32 or bf16; header.version is set from `dtype`)
// atomically. Every tensor of llmc_parameters(header) must be given, with that shape.
void write_llmc_checkpoint(const std::string& path, const LlmcHeader& header,
                           const std::map<std::string, Tensor>& tensors, DType dtype);

}  // namespace hetu::checkpoint
