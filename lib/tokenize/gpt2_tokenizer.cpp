// GPT-2 byte-level BPE (see gpt2_tokenizer.h). Tokens are held as the bytes they stand for,
// not as bytes_to_unicode strings: the table is a bijection, so merging byte strings is
// merging GPT-2's unicode strings. encode = regex pieces -> merge loop per piece (cached for
// the call) -> ids; decode = ids -> bytes.
#include "lib/tokenize/gpt2_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>

#include "lib/tokenize/vocab_file.h"
#include "lib/util/error.h"

namespace hetu::tokenize {
namespace {

std::string read_or_fail(const std::string& path) {
  std::string reason;
  std::optional<std::string> text = read_vocab_file(path, reason);
  if (!text) HT_USAGE_ERROR("gpt2 tokenizer: cannot read {}: {}", path, reason);
  return std::move(*text);
}

// OpenAI's pattern, verbatim. PCRE2_UCP gives \s, \p{L} and \p{N} their Unicode meaning.
constexpr const char* kPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Pieces longer than this go through bpe_heap() (n log n) instead of the reference loop
// (n^2 pair lookups); pieces up to kMaxCachedPiece bytes are cached for the call.
constexpr size_t kLongPiece = 24;
constexpr size_t kMaxCachedPiece = 256;
constexpr size_t kMaxCachePool = size_t{1} << 24;  // ids held by the cache; past this it starts over

constexpr char32_t kAlphabetEnd = 256 + 68;  // bytes_to_unicode's image lies below this

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') map to
// themselves, the other 68 bytes in order to U+0100, U+0101, ...
std::array<char32_t, 256> bytes_to_unicode() {
  std::array<char32_t, 256> table{};
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    table[b] = printable ? static_cast<char32_t>(b) : next++;
  }
  return table;
}

// The inverse table: code point -> byte, -1 outside the alphabet. A constant, built once.
const std::array<int16_t, kAlphabetEnd>& alphabet_inverse() {
  static const std::array<int16_t, kAlphabetEnd> inverse = [] {
    std::array<int16_t, kAlphabetEnd> result{};
    result.fill(-1);
    const std::array<char32_t, 256> table = bytes_to_unicode();
    for (int b = 0; b < 256; ++b) result[table[b]] = static_cast<int16_t>(b);
    return result;
  }();
  return inverse;
}

// A token string of encoder.json / vocab.bpe (UTF-8 over GPT-2's alphabet) -> its bytes;
// false when it holds a character outside the alphabet.
bool token_to_bytes(std::string_view token, const std::array<int16_t, kAlphabetEnd>& inverse, std::string& out) {
  out.clear();
  for (size_t i = 0; i < token.size();) {
    const auto c = static_cast<unsigned char>(token[i]);
    char32_t cp = 0;
    size_t len = 0;
    if (c < 0x80) {
      cp = c, len = 1;
    } else if ((c & 0xE0) == 0xC0 && i + 1 < token.size()) {
      const auto c1 = static_cast<unsigned char>(token[i + 1]);
      cp = (static_cast<char32_t>(c & 0x1F) << 6) | (c1 & 0x3F), len = 2;
      if ((c1 & 0xC0) != 0x80 || cp < 0x80) return false;  // not a continuation byte, or overlong
    } else {
      return false;  // 3- and 4-byte characters all lie above U+0143
    }
    if (cp >= kAlphabetEnd || inverse[cp] < 0) return false;
    out.push_back(static_cast<char>(inverse[cp]));
    i += len;
  }
  return !out.empty();
}

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

}  // namespace

struct Gpt2Tokenizer::Regex {
  pcre2_code* code = nullptr;
  ~Regex() { pcre2_code_free(code); }
};

Gpt2Tokenizer::~Gpt2Tokenizer() = default;

Gpt2Tokenizer::Gpt2Tokenizer(const std::string& vocab_dir) {
  namespace fs = std::filesystem;
  HT_USAGE_CHECK(!vocab_dir.empty(), "gpt2 tokenizer needs a vocab directory (with encoder.json and vocab.bpe)");
  std::error_code ec;
  HT_USAGE_CHECK(fs::is_directory(vocab_dir, ec),
                 "gpt2 tokenizer: vocab directory {} does not exist or is not a directory (it should hold "
                 "encoder.json and vocab.bpe)",
                 vocab_dir);
  const std::string encoder_path = (fs::path(vocab_dir) / "encoder.json").string();
  const std::unordered_map<std::string, int32_t> bytes_to_id = load_encoder(encoder_path);
  load_merges((fs::path(vocab_dir) / "vocab.bpe").string(), bytes_to_id);
  check_merge_order();

  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  regex_ = std::make_unique<Regex>();
  regex_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kPattern), PCRE2_ZERO_TERMINATED,
                               PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error_code, &error_offset, nullptr);
  if (regex_->code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error_code, message, sizeof(message));
    HT_THROW("gpt2 tokenizer: PCRE2 rejected the pattern at offset {}: {}", error_offset,
             reinterpret_cast<const char*>(message));
  }
  pcre2_jit_compile(regex_->code, PCRE2_JIT_COMPLETE);  // when JIT is unavailable, the interpreter runs
}

// encoder.json: {"token": id, ...} with ids 0..N-1, each once; fills id_to_bytes_,
// byte_to_id_ and eot_id_ and returns bytes -> id for load_merges().
std::unordered_map<std::string, int32_t> Gpt2Tokenizer::load_encoder(const std::string& path) {
  const std::string text = read_or_fail(path);
  nlohmann::json encoder;
  try {
    encoder = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    HT_USAGE_ERROR("gpt2 tokenizer: {}: not valid JSON: {}", path, e.what());
  }
  HT_USAGE_CHECK(encoder.is_object() && !encoder.empty(),
                 "gpt2 tokenizer: {}: expected a JSON object mapping token strings to ids, got {}", path,
                 encoder.type_name());
  const auto& inverse = alphabet_inverse();
  std::unordered_map<std::string, int32_t> bytes_to_id;
  bytes_to_id.reserve(encoder.size());
  id_to_bytes_.resize(encoder.size());
  std::vector<bool> seen(encoder.size(), false);
  std::string bytes;
  for (const auto& [token, value] : encoder.items()) {
    HT_USAGE_CHECK(value.is_number_integer(), "gpt2 tokenizer: {}: token \"{}\": expected an integer id, got {}",
                   path, token, value.dump());
    const int64_t id = value.get<int64_t>();
    HT_USAGE_CHECK(id >= 0 && id < static_cast<int64_t>(encoder.size()) && !seen[static_cast<size_t>(id)],
                   "gpt2 tokenizer: {}: token \"{}\": id {} is duplicated or outside [0, {}) (ids must be 0..N-1, "
                   "each once)",
                   path, token, id, encoder.size());
    seen[static_cast<size_t>(id)] = true;
    if (token == "<|endoftext|>") eot_id_ = static_cast<int32_t>(id);
    HT_USAGE_CHECK(token_to_bytes(token, inverse, bytes),
                   "gpt2 tokenizer: {}: token \"{}\" holds a character outside GPT-2's byte alphabet", path, token);
    id_to_bytes_[static_cast<size_t>(id)] = bytes;
    bytes_to_id.emplace(bytes, static_cast<int32_t>(id));
  }
  HT_USAGE_CHECK(eot_id_ >= 0, "gpt2 tokenizer: {}: no \"<|endoftext|>\" token", path);
  const std::array<char32_t, 256> table = bytes_to_unicode();
  for (int b = 0; b < 256; ++b) {
    const auto it = bytes_to_id.find(std::string(1, static_cast<char>(b)));
    HT_USAGE_CHECK(it != bytes_to_id.end(), "gpt2 tokenizer: {}: no token for byte 0x{:02x} (U+{:04X})", path, b,
                   static_cast<uint32_t>(table[b]));
    byte_to_id_[b] = it->second;
  }
  return bytes_to_id;
}

// vocab.bpe: "#version: 0.2", then one merge "left right" per line, rank = order. As in
// encoder.py's dict, a repeated pair keeps its last rank.
void Gpt2Tokenizer::load_merges(const std::string& path, const std::unordered_map<std::string, int32_t>& bytes_to_id) {
  const std::string text = read_or_fail(path);
  const auto& inverse = alphabet_inverse();
  std::string left_bytes, bytes;
  int32_t rank = 0;
  size_t line_start = 0;
  for (int64_t line_number = 1; line_start < text.size(); ++line_number) {
    size_t line_end = text.find('\n', line_start);
    if (line_end == std::string::npos) line_end = text.size();
    std::string_view line(text.data() + line_start, line_end - line_start);
    line_start = line_end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (line_number == 1 && line.starts_with('#'))) continue;
    const size_t space = line.find(' ');
    HT_USAGE_CHECK(space != std::string_view::npos && space > 0 && space + 1 < line.size() &&
                       line.find(' ', space + 1) == std::string_view::npos,
                   "gpt2 tokenizer: {}:{}: expected two symbols separated by one space, got \"{}\"", path,
                   line_number, line);
    int32_t ids[2] = {-1, -1};
    for (int side = 0; side < 2; ++side) {
      const std::string_view symbol = side == 0 ? line.substr(0, space) : line.substr(space + 1);
      const bool ok = token_to_bytes(symbol, inverse, bytes);
      const auto it = ok ? bytes_to_id.find(bytes) : bytes_to_id.end();
      HT_USAGE_CHECK(it != bytes_to_id.end(), "gpt2 tokenizer: {}:{}: unknown symbol \"{}\" (not in encoder.json)",
                     path, line_number, symbol);
      ids[side] = it->second;
      if (side == 0) left_bytes = bytes;
    }
    const auto merged = bytes_to_id.find(left_bytes + bytes);
    HT_USAGE_CHECK(merged != bytes_to_id.end(),
                   "gpt2 tokenizer: {}:{}: the merge of \"{}\" is not a token of encoder.json", path, line_number,
                   line);
    merges_[pair_key(ids[0], ids[1])] = Merge{rank++, merged->second};
  }
}

// See Note [BPE with a heap]: every merge must rank after the merges that make its halves,
// and no token may be made by two merges.
void Gpt2Tokenizer::check_merge_order() {
  std::vector<int32_t> made_at(id_to_bytes_.size(), -1);
  for (const auto& [key, merge] : merges_) {
    int32_t& at = made_at[static_cast<size_t>(merge.id)];
    if (at >= 0) merges_causal_ = false;
    at = merge.rank;
  }
  for (const auto& [key, merge] : merges_) {
    const auto left = static_cast<size_t>(key >> 32), right = static_cast<size_t>(key & 0xFFFFFFFFu);
    if (made_at[left] >= merge.rank || made_at[right] >= merge.rank) merges_causal_ = false;
  }
}

const Gpt2Tokenizer::Merge* Gpt2Tokenizer::find_merge(int32_t left, int32_t right) const {
  const auto it = merges_.find(pair_key(left, right));
  return it == merges_.end() ? nullptr : &it->second;
}

// encoder.py's bpe(), on ids: find the lowest-ranked adjacent pair, merge every occurrence
// of it left to right, repeat until no pair has a rank.
void Gpt2Tokenizer::bpe_reference(std::string_view piece, std::vector<int32_t>& symbols) const {
  symbols.clear();
  for (char c : piece) symbols.push_back(byte_to_id_[static_cast<unsigned char>(c)]);
  while (symbols.size() > 1) {
    const Merge* best = nullptr;
    int32_t best_left = -1, best_right = -1;
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      const Merge* merge = find_merge(symbols[i], symbols[i + 1]);
      if (merge != nullptr && (best == nullptr || merge->rank < best->rank)) {
        best = merge, best_left = symbols[i], best_right = symbols[i + 1];
      }
    }
    if (best == nullptr) break;
    size_t out = 0;
    for (size_t i = 0; i < symbols.size(); ++out) {
      if (i + 1 < symbols.size() && symbols[i] == best_left && symbols[i + 1] == best_right) {
        symbols[out] = best->id, i += 2;
      } else {
        symbols[out] = symbols[i], i += 1;
      }
    }
    symbols.resize(out);
  }
}

// Note [BPE with a heap]
// bpe_heap() keeps the symbols in a linked list and every adjacent pair that has a rank in a
// min-heap ordered by (rank, position), and merges one occurrence at a time, skipping heap
// entries whose symbols have since changed. It makes the same merges as the reference loop
// when every pair that contains a merged token ranks after the one merge that made it: then all
// occurrences of the lowest pair are merged, leftmost first and non-overlapping, before any
// pair they create. GPT-2's merges have that order (each is learnt after its halves); the
// constructor checks it (merges_causal_) and encode() uses the heap only then. Cost
// O(n log n) instead of O(n^2) lookups, which matters for long runs of letters or symbols.
void Gpt2Tokenizer::bpe_heap(std::string_view piece, std::vector<int32_t>& symbols) const {
  struct Node {
    int32_t id, prev, next;  // id -1: absorbed into its left neighbour
  };
  struct Candidate {
    int32_t rank, left, left_id, right_id;
    bool operator>(const Candidate& other) const {
      return rank != other.rank ? rank > other.rank : left > other.left;
    }
  };
  const auto n = static_cast<int32_t>(piece.size());
  std::vector<Node> nodes(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    nodes[i] = {byte_to_id_[static_cast<unsigned char>(piece[i])], i - 1, i + 1 < n ? i + 1 : -1};
  }
  std::vector<Candidate> heap;
  auto push = [&](int32_t left) {
    if (left < 0 || nodes[left].next < 0) return;
    const int32_t left_id = nodes[left].id, right_id = nodes[nodes[left].next].id;
    if (const Merge* merge = find_merge(left_id, right_id)) {
      heap.push_back({merge->rank, left, left_id, right_id});
      std::push_heap(heap.begin(), heap.end(), std::greater<>{});
    }
  };
  for (int32_t i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>{});
    const Candidate c = heap.back();
    heap.pop_back();
    Node& left = nodes[c.left];
    if (left.id != c.left_id || left.next < 0 || nodes[left.next].id != c.right_id) continue;  // stale
    Node& right = nodes[left.next];
    left.id = find_merge(c.left_id, c.right_id)->id;
    left.next = right.next;
    if (right.next >= 0) nodes[right.next].prev = c.left;
    right.id = -1;
    push(left.prev);
    push(c.left);
  }
  symbols.clear();
  for (int32_t i = 0; i >= 0; i = nodes[i].next) symbols.push_back(nodes[i].id);
}

std::vector<int32_t> Gpt2Tokenizer::bpe(std::string_view piece, bool reference) const {
  std::vector<int32_t> symbols;
  if (piece.empty()) return symbols;
  if (reference) {
    bpe_reference(piece, symbols);
  } else {
    bpe_heap(piece, symbols);
  }
  return symbols;
}

// Note [Invalid UTF-8 in GPT-2 encode]
// encoder.py takes a Python str, so it never sees invalid UTF-8; hetu takes bytes. The
// pattern is compiled with PCRE2_MATCH_INVALID_UTF: an ill-formed sequence matches nothing,
// and each maximal run of bytes between two matches goes through the merge loop as a piece
// of its own (merges of partial characters, like GPT-2's "\xe2\x80", still apply). Every
// byte lands in some piece, so decode(encode(s)) == s for any bytes, NULs included. Valid
// UTF-8 leaves no such runs (the alternatives cover every character), so GPT-2's result is
// unchanged.
std::vector<int32_t> Gpt2Tokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  if (text.empty()) return ids;
  ids.reserve(text.size() / 4 + 16);
  struct CacheEntry {
    uint32_t begin, size;  // a span of `pool`
  };
  std::unordered_map<std::string_view, CacheEntry> cache;
  std::vector<int32_t> pool;
  std::vector<int32_t> symbols;
  auto encode_piece = [&](std::string_view piece) {
    if (piece.size() == 1) {
      ids.push_back(byte_to_id_[static_cast<unsigned char>(piece[0])]);
      return;
    }
    const bool cacheable = piece.size() <= kMaxCachedPiece;
    if (cacheable) {
      const auto it = cache.find(piece);
      if (it != cache.end()) {
        ids.insert(ids.end(), pool.begin() + it->second.begin, pool.begin() + it->second.begin + it->second.size);
        return;
      }
    }
    if (piece.size() > kLongPiece && merges_causal_) {
      bpe_heap(piece, symbols);
    } else {
      bpe_reference(piece, symbols);
    }
    ids.insert(ids.end(), symbols.begin(), symbols.end());
    if (cacheable) {
      if (pool.size() + symbols.size() > kMaxCachePool) cache.clear(), pool.clear();
      cache.emplace(piece, CacheEntry{static_cast<uint32_t>(pool.size()), static_cast<uint32_t>(symbols.size())});
      pool.insert(pool.end(), symbols.begin(), symbols.end());
    }
  };

  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match(
      pcre2_match_data_create_from_pattern(regex_->code, nullptr), &pcre2_match_data_free);
  HT_CHECK(match != nullptr, "gpt2 tokenizer: out of memory for PCRE2 match data");
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  while (pos < text.size()) {
    const int rc = pcre2_match(regex_->code, subject, text.size(), pos, 0, match.get(), nullptr);
    size_t begin = text.size(), end = text.size();
    if (rc >= 0) {
      const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.get());
      begin = ovector[0], end = ovector[1];
    } else if (rc != PCRE2_ERROR_NOMATCH) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof(message));
      HT_THROW("gpt2 tokenizer: PCRE2 match failed at byte {}: {}", pos, reinterpret_cast<const char*>(message));
    }
    HT_CHECK(rc < 0 || end > begin, "gpt2 tokenizer: the pattern matched empty at byte {}", begin);
    if (begin > pos) encode_piece(text.substr(pos, begin - pos));  // bytes no match covers
    if (end > begin) encode_piece(text.substr(begin, end - begin));
    pos = end;
  }
  return ids;
}

std::string Gpt2Tokenizer::decode(const std::vector<int32_t>& ids) const {
  const auto vocab = static_cast<int32_t>(id_to_bytes_.size());
  size_t total = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    HT_CHECK(ids[i] >= 0 && ids[i] < vocab, "gpt2 tokenizer: token id {} at position {} is outside [0, {})", ids[i], i,
             vocab);
    total += id_to_bytes_[static_cast<size_t>(ids[i])].size();
  }
  std::string text;
  text.reserve(total);
  for (int32_t id : ids) text += id_to_bytes_[static_cast<size_t>(id)];
  return text;
}

}  // namespace hetu::tokenize
