// Reading a `.tiktoken` ranks file (see tiktoken_ranks.h): strict base64, decimal ranks, no
// rank or token twice, a rank for every single byte.
#include "lib/tokenize/tiktoken_ranks.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>

#include "lib/tokenize/vocab_file.h"
#include "lib/util/error.h"

namespace hetu::tokenize {
namespace {

// The value of a base64 character, -1 for anything else (padding '=' is handled apart).
int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Standard base64 with padding (what tiktoken writes); false when `text` is not exactly that.
bool decode_base64(std::string_view text, std::string& out) {
  out.clear();
  if (text.empty() || text.size() % 4 != 0) return false;
  size_t padding = 0;
  if (text.back() == '=') padding = text[text.size() - 2] == '=' ? 2 : 1;
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    uint32_t word = 0;
    for (size_t j = 0; j < 4; ++j) {
      const char c = text[i + j];
      int v = 0;
      if (c == '=') {
        if (!last || j < 4 - padding) return false;  // '=' only as the final padding
      } else {
        v = base64_value(c);
        if (v < 0 || (last && j >= 4 - padding)) return false;
      }
      word = (word << 6) | static_cast<uint32_t>(v);
    }
    const size_t bytes = last ? 3 - padding : 3;
    for (size_t k = 0; k < bytes; ++k) out.push_back(static_cast<char>((word >> (16 - 8 * k)) & 0xFF));
  }
  return !out.empty();
}

uint64_t load_word(const char* p, size_t n) {
  uint64_t w = 0;
  std::memcpy(&w, p, n);
  return w;
}

}  // namespace

size_t BytesHash::operator()(std::string_view bytes) const noexcept {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  uint64_t h = bytes.size() * kMul;
  const char* p = bytes.data();
  size_t n = bytes.size();
  for (; n >= 8; p += 8, n -= 8) h = (h ^ load_word(p, 8)) * kMul, h ^= h >> 29;
  if (n > 0) h = (h ^ load_word(p, n)) * kMul, h ^= h >> 29;
  h ^= h >> 32;
  return static_cast<size_t>(h);
}

std::string_view TiktokenRanks::bytes(int32_t rank) const {
  if (rank < 0 || rank >= end()) return {};
  return std::string_view(arena_).substr(offsets_[rank], offsets_[rank + 1] - offsets_[rank]);
}

int32_t TiktokenRanks::insert(int32_t rank) {
  const std::string_view bytes = this->bytes(rank);
  const int32_t existing = find(bytes);
  if (existing != kNone) return existing;
  const size_t h = BytesHash{}(bytes);
  size_t i = h & mask_;
  while (table_[i].rank != kNone) i = (i + 1) & mask_;
  table_[i] = Slot{static_cast<uint32_t>(h), rank};
  ++count_;
  return kNone;
}

TiktokenRanks load_tiktoken_ranks(const std::string& path) {
  std::string reason;
  std::optional<std::string> text = read_vocab_file(path, reason);
  if (!text) HT_USAGE_ERROR("tiktoken ranks file {}: cannot read it: {}", path, reason);
  return parse_tiktoken_ranks(*text, path);
}

TiktokenRanks parse_tiktoken_ranks(std::string_view text, const std::string& path) {
  // First pass: (rank, bytes) per line, then lay the bytes out in rank order.
  struct Entry {
    int32_t rank;
    uint32_t offset, size;  // in `decoded`
    int64_t line;
  };
  std::vector<Entry> entries;
  std::string decoded, token;
  int32_t max_rank = -1;
  size_t line_start = 0;
  for (int64_t line_number = 1; line_start < text.size(); ++line_number) {
    size_t line_end = text.find('\n', line_start);
    if (line_end == std::string_view::npos) line_end = text.size();
    std::string_view line = text.substr(line_start, line_end - line_start);
    line_start = line_end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const size_t space = line.find(' ');
    HT_USAGE_CHECK(space != std::string_view::npos && space > 0 && space + 1 < line.size(),
                   "tiktoken ranks file {}:{}: expected \"BASE64 RANK\", got \"{}\"", path, line_number, line);
    const std::string_view b64 = line.substr(0, space), rank_text = line.substr(space + 1);
    HT_USAGE_CHECK(decode_base64(b64, token), "tiktoken ranks file {}:{}: \"{}\" is not valid base64", path,
                   line_number, b64);
    int64_t rank = -1;
    const auto [end, ec] = std::from_chars(rank_text.data(), rank_text.data() + rank_text.size(), rank);
    HT_USAGE_CHECK(ec == std::errc{} && end == rank_text.data() + rank_text.size() && rank >= 0 && rank < (1 << 30),
                   "tiktoken ranks file {}:{}: rank \"{}\" is not an integer in [0, 2^30)", path, line_number,
                   rank_text);
    entries.push_back({static_cast<int32_t>(rank), static_cast<uint32_t>(decoded.size()),
                       static_cast<uint32_t>(token.size()), line_number});
    decoded += token;
    max_rank = std::max(max_rank, static_cast<int32_t>(rank));
  }
  HT_USAGE_CHECK(!entries.empty(), "tiktoken ranks file {}: holds no ranks", path);

  TiktokenRanks ranks;
  std::vector<const Entry*> by_rank(static_cast<size_t>(max_rank) + 1, nullptr);
  for (const Entry& e : entries) {
    const Entry*& slot = by_rank[static_cast<size_t>(e.rank)];
    HT_USAGE_CHECK(slot == nullptr, "tiktoken ranks file {}:{}: rank {} is already given on line {}", path, e.line,
                   e.rank, slot == nullptr ? 0 : slot->line);
    slot = &e;
  }
  ranks.arena_.reserve(decoded.size());
  ranks.offsets_.reserve(by_rank.size() + 1);
  for (const Entry* e : by_rank) {
    ranks.offsets_.push_back(static_cast<uint32_t>(ranks.arena_.size()));
    if (e != nullptr) ranks.arena_.append(decoded, e->offset, e->size);
  }
  ranks.offsets_.push_back(static_cast<uint32_t>(ranks.arena_.size()));
  size_t slots = 16;
  while (slots < 2 * entries.size()) slots *= 2;
  ranks.table_.assign(slots, TiktokenRanks::Slot{});
  ranks.mask_ = slots - 1;
  for (int32_t r = 0; r <= max_rank; ++r) {
    const Entry* e = by_rank[static_cast<size_t>(r)];
    if (e == nullptr) continue;
    const int32_t existing = ranks.insert(r);
    HT_USAGE_CHECK(existing == TiktokenRanks::kNone,
                   "tiktoken ranks file {}:{}: token of rank {} repeats the token of rank {}", path, e->line, r, existing);
  }
  for (int b = 0; b < 256; ++b) {
    const char c = static_cast<char>(b);
    const int32_t r = ranks.find(std::string_view(&c, 1));
    HT_USAGE_CHECK(r != TiktokenRanks::kNone, "tiktoken ranks file {}: no rank for the single byte 0x{:02x} (every "
                   "byte needs one)", path, b);
    ranks.byte_rank_[b] = r;
  }
  return ranks;
}

}  // namespace hetu::tokenize
