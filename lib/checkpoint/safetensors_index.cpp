// Sharded safetensors folders: greedy sharding in the given tensor order, the index JSON,
// and the cross-checks between the index and the shards' own headers.
#include "lib/checkpoint/safetensors_index.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "lib/checkpoint/safetensors.h"
#include "lib/util/atomic_file.h"
#include "lib/util/error.h"

namespace hetu::checkpoint {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr uint64_t kMaxIndexBytes = 100'000'000;

uint64_t byte_size(const Tensor& t) { return static_cast<uint64_t>(t.numel()) * dtype_size(t.dtype()); }

std::string shard_name(size_t i, size_t n) { return fmt::format("model-{:05d}-of-{:05d}.safetensors", i + 1, n); }

// A plain file name: no folder part, not hidden, ends in .safetensors.
bool plain_shard_name(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos && name.find('\0') == std::string::npos &&
         name[0] != '.' && name.size() > 12 && name.compare(name.size() - 12, 12, ".safetensors") == 0;
}

std::string read_text_file(const fs::path& path) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) HT_USAGE_ERROR("{}: cannot read: {}", path.string(), ec.message());
  if (size > kMaxIndexBytes)
    HT_USAGE_ERROR("{}: {} bytes, larger than any safetensors index should be", path.string(), size);
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) HT_USAGE_ERROR("{}: cannot read", path.string());
  return text.str();
}

}  // namespace

std::vector<std::string> write_safetensors_folder(const std::string& dir,
                                                  const std::vector<std::pair<std::string, Tensor>>& tensors,
                                                  const std::map<std::string, std::string>& metadata,
                                                  uint64_t max_shard_bytes) {
  HT_USAGE_CHECK(max_shard_bytes >= 1, "safetensors: the shard size limit must be >= 1 byte");
  // Greedy: a shard takes tensors until the next one would pass the limit.
  std::vector<std::vector<std::pair<std::string, Tensor>>> shards(1);
  uint64_t filled = 0, total = 0;
  for (const auto& entry : tensors) {
    const uint64_t nbytes = byte_size(entry.second);
    if (!shards.back().empty() && filled + nbytes > max_shard_bytes) {
      shards.emplace_back();
      filled = 0;
    }
    shards.back().push_back(entry);
    filled += nbytes;
    total += nbytes;
  }
  const fs::path folder(dir);
  if (shards.size() == 1) {
    write_safetensors((folder / kSafetensorsSingleFile).string(), shards[0], metadata);
    return {kSafetensorsSingleFile};
  }
  std::vector<std::string> written;
  json weight_map = json::object();
  for (size_t i = 0; i < shards.size(); ++i) {
    const std::string name = shard_name(i, shards.size());
    write_safetensors((folder / name).string(), shards[i], metadata);
    for (const auto& [tensor, value] : shards[i]) weight_map[tensor] = name;
    written.push_back(name);
  }
  const json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
  write_file_atomic((folder / kSafetensorsIndexFile).string(), index.dump(2) + "\n");
  written.push_back(kSafetensorsIndexFile);
  return written;
}

std::map<std::string, std::string> parse_safetensors_index(const std::string& text, const std::string& file) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    HT_USAGE_ERROR("{}: not valid JSON: {}", file, e.what());
  }
  if (!root.is_object() || !root.contains("weight_map") || !root["weight_map"].is_object()) {
    HT_USAGE_ERROR("{}: expected an object with a \"weight_map\" object (tensor name -> shard file)", file);
  }
  std::map<std::string, std::string> map;
  for (const auto& [tensor, shard] : root["weight_map"].items()) {
    if (!shard.is_string() || !plain_shard_name(shard.get<std::string>())) {
      HT_USAGE_ERROR("{}: weight_map \"{}\": {} is not a plain *.safetensors file name in this folder", file, tensor,
                     shard.dump());
    }
    map[tensor] = shard.get<std::string>();
  }
  if (map.empty()) HT_USAGE_ERROR("{}: weight_map is empty", file);
  return map;
}

SafetensorsFolder read_safetensors_folder(const std::string& path) {
  const fs::path p(path);
  SafetensorsFolder out;
  if (!fs::is_directory(p)) {
    if (!fs::exists(p)) HT_USAGE_ERROR("{}: no such file or folder", path);
    SafetensorsReader reader(path);
    out.tensors = reader.read_all();
    out.metadata = reader.header().metadata;
    out.files.push_back(path);
    return out;
  }
  const fs::path index_path = p / kSafetensorsIndexFile;
  if (!fs::exists(index_path)) {
    HT_USAGE_CHECK(fs::exists(p / kSafetensorsSingleFile), "{}: neither {} nor {} in this folder", path,
                   kSafetensorsSingleFile, kSafetensorsIndexFile);
    return read_safetensors_folder((p / kSafetensorsSingleFile).string());
  }
  const std::string index_name = index_path.string();
  const std::map<std::string, std::string> map = parse_safetensors_index(read_text_file(index_path), index_name);
  std::set<std::string> shards;
  for (const auto& [tensor, shard] : map) shards.insert(shard);
  for (const std::string& shard : shards) {
    const std::string shard_path = (p / shard).string();
    HT_USAGE_CHECK(fs::is_regular_file(p / shard), "{}: names shard {}, which is not in the folder", index_name, shard);
    SafetensorsReader reader(shard_path);
    if (out.files.empty()) out.metadata = reader.header().metadata;
    out.files.push_back(shard_path);
    for (const SafetensorsEntry& e : reader.header().entries) {
      auto it = map.find(e.name);
      if (it == map.end() || it->second != shard) {
        HT_USAGE_ERROR("{}: holds tensor \"{}\", which {} {}", shard_path, e.name, index_name,
                       it == map.end() ? "does not list" : "places in " + it->second);
      }
      out.tensors[e.name] = reader.read(e);
    }
  }
  for (const auto& [tensor, shard] : map) {
    HT_USAGE_CHECK(out.tensors.count(tensor), "{}: tensor \"{}\" is missing from shard {}", index_name, tensor, shard);
  }
  return out;
}

}  // namespace hetu::checkpoint
