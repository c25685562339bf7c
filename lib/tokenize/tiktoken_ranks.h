// A tiktoken ranks file (`.tiktoken`: OpenAI's cl100k_base / o200k_base, Meta's Llama 3
// tokenizer.model): one token per line, `BASE64(token bytes) RANK`, rank = merge priority =
// token id. TiktokenRanks holds the bytes of every rank in one arena and a hash map from bytes
// to rank. Every problem with the file is a UsageError naming the file and line.
//
//   TiktokenRanks ranks = load_tiktoken_ranks("tests/data/tiktoken/cl100k_base.tiktoken");
//   ranks.find("Hello") == 9906;  ranks.bytes(9906) == "Hello";
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace hetu::tokenize {

// A fast hash over byte strings (64-bit multiply-mix over 8-byte words), for the rank map.
struct BytesHash {
  size_t operator()(std::string_view bytes) const noexcept;
};

class TiktokenRanks {
 public:
  static constexpr int32_t kNone = -1;

  // The rank of these bytes, or kNone.
  int32_t find(std::string_view bytes) const {
    const auto it = map_.find(bytes);
    return it == map_.end() ? kNone : it->second;
  }
  // The bytes of a rank; empty for a rank in [0, end()) that the file does not list.
  std::string_view bytes(int32_t rank) const;
  // One past the largest rank.
  int32_t end() const { return static_cast<int32_t>(offsets_.size()) - 1; }
  int64_t count() const { return static_cast<int64_t>(map_.size()); }
  // The rank of a single byte (every byte has one: load checks it).
  int32_t byte_rank(unsigned char b) const { return byte_rank_[b]; }

 private:
  friend TiktokenRanks parse_tiktoken_ranks(std::string_view text, const std::string& path);
  std::string arena_;                 // the bytes of every rank, in rank order
  std::vector<uint32_t> offsets_;     // rank r is arena_[offsets_[r], offsets_[r + 1])
  // Views into arena_, which holds at least the 256 single bytes, so it lives on the heap and a
  // move keeps the views valid.
  std::unordered_map<std::string_view, int32_t, BytesHash> map_;
  int32_t byte_rank_[256] = {};
};

// Reads the file; `path` names it in errors ("PATH:LINE: ...").
TiktokenRanks load_tiktoken_ranks(const std::string& path);
// The same from text already read (tests, and load_tiktoken_ranks itself).
TiktokenRanks parse_tiktoken_ranks(std::string_view text, const std::string& path);

}  // namespace hetu::tokenize
