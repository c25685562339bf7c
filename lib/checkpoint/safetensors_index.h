// Hugging Face weight folders: one model.safetensors, or shards model-0000i-of-0000n.safetensors
// listed by model.safetensors.index.json ({"metadata": {"total_size": bytes}, "weight_map":
// {tensor name: shard file name}}). Reading checks the index like a safetensors header:
// shard names are plain file names in the folder, every tensor lives in exactly the shard
// the map names, and no shard holds a tensor the map does not list.
//
//   write_safetensors_folder("out", tensors, {{"format", "pt"}}, 5'000'000'000);
//   // out/model.safetensors, or out/model-00001-of-00002.safetensors ... + the index
//   SafetensorsFolder back = read_safetensors_folder("out");
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lib/core/tensor.h"

namespace hetu::checkpoint {

inline constexpr const char* kSafetensorsSingleFile = "model.safetensors";
inline constexpr const char* kSafetensorsIndexFile = "model.safetensors.index.json";

struct SafetensorsFolder {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;  // "__metadata__" of the first shard
  std::vector<std::string> files;               // the safetensors files read, in order
};

// Writes the tensors (in the given order) into `dir` (which must exist): one
// model.safetensors when they fit in max_shard_bytes, else shards of at most that many data
// bytes each (a larger tensor gets a shard of its own) and the index. Each file is written
// atomically, the index last. Returns the file names written.
std::vector<std::string> write_safetensors_folder(const std::string& dir,
                                                  const std::vector<std::pair<std::string, Tensor>>& tensors,
                                                  const std::map<std::string, std::string>& metadata,
                                                  uint64_t max_shard_bytes);

// Reads a folder (its index when present, else model.safetensors) or a single .safetensors file.
SafetensorsFolder read_safetensors_folder(const std::string& path);

// Parses and validates index JSON text: tensor name -> shard file name (`file` names it in errors).
std::map<std::string, std::string> parse_safetensors_index(const std::string& text, const std::string& file);

}  // namespace hetu::checkpoint
