// A tiktoken ranks file (`.tiktoken`: OpenAI's cl100k_base / o200k_base, Meta's Llama 3
// tokenizer.model): one token per line, `BASE64(token bytes) RANK`, rank = merge priority =
// token id. TiktokenRanks holds the bytes of every rank in one arena and a hash map from bytes
// to rank (open addressing, see find()). Every problem with the file is a UsageError naming the file and line.
//
//   TiktokenRanks ranks = load_tiktoken_ranks("tests/data/tiktoken/cl100k_base.tiktoken");
//   ranks.find("Hello") == 9906;  ranks.bytes(9906) == "Hello";
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace hetu::tokenize {

// A fast hash over byte strings (64-bit multiply-mix over 8-byte words), for the rank map.
struct BytesHash {
  size_t operator()(std::string_view bytes) const noexcept;
};

class TiktokenRanks {
 public:
  static constexpr int32_t kNone = -1;

  // The rank of these bytes, or kNone. The table is a power of two of slots, at most half
  // full, probed linearly from the hash; a slot holds the hash's low 32 bits and the rank, whose
  // bytes are compared only when those match.
  int32_t find(std::string_view bytes) const {
    const size_t h = BytesHash{}(bytes);
    const auto tag = static_cast<uint32_t>(h);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& slot = table_[i];
      if (slot.rank == kNone) return kNone;
      if (slot.tag == tag) {
        const uint32_t begin = offsets_[static_cast<size_t>(slot.rank)];
        const uint32_t size = offsets_[static_cast<size_t>(slot.rank) + 1] - begin;
        if (size == bytes.size() && std::memcmp(arena_.data() + begin, bytes.data(), size) == 0) return slot.rank;
      }
    }
  }
  // The bytes of a rank; empty for a rank in [0, end()) that the file does not list.
  std::string_view bytes(int32_t rank) const;
  // One past the largest rank.
  int32_t end() const { return static_cast<int32_t>(offsets_.size()) - 1; }
  int64_t count() const { return count_; }
  // The rank of a single byte (every byte has one: load checks it).
  int32_t byte_rank(unsigned char b) const { return byte_rank_[b]; }

 private:
  friend TiktokenRanks parse_tiktoken_ranks(std::string_view text, const std::string& path);
  struct Slot {
    uint32_t tag = 0;
    int32_t rank = kNone;  // kNone: empty
  };
  // Inserts the rank's bytes; returns the rank already holding them, or kNone.
  int32_t insert(int32_t rank);

  std::string arena_;                 // the bytes of every rank, in rank order
  std::vector<uint32_t> offsets_;     // rank r is arena_[offsets_[r], offsets_[r + 1])
  std::vector<Slot> table_;
  size_t mask_ = 0;                   // table_.size() - 1
  int64_t count_ = 0;
  int32_t byte_rank_[256] = {};
};

// Reads the file; `path` names it in errors ("PATH:LINE: ...").
TiktokenRanks load_tiktoken_ranks(const std::string& path);
// The same from text already read (tests, and load_tiktoken_ranks itself).
TiktokenRanks parse_tiktoken_ranks(std::string_view text, const std::string& path);

}  // namespace hetu::tokenize
