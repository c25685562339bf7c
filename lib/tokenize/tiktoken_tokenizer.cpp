// The tiktoken-format BPE tokenizer (see tiktoken_tokenizer.h): pattern pieces -> a piece that
// is a whole token maps to its rank, any other goes through the merge loop -> ids; special
// tokens, where allowed, split the text first. decode = ids -> bytes.
#include "lib/tokenize/tiktoken_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <climits>
#include <functional>

#include "lib/tokenize/white_space_pattern.h"
#include "lib/util/error.h"

namespace hetu::tokenize {
namespace {

constexpr int32_t kNoRank = INT32_MAX;  // "this pair is not a token" in the merge loops
constexpr size_t kLongPiece = 64;       // longer pieces take the heap loop (n log n)

}  // namespace

struct TiktokenTokenizer::Regex {
  pcre2_code* code = nullptr;
  ~Regex() { pcre2_code_free(code); }
};

// Buffers one encode() call reuses across its pieces, so pieces allocate nothing.
struct TiktokenTokenizer::Scratch {
  std::vector<uint32_t> starts;
  std::vector<int32_t> pair_ranks;
  struct Node {
    uint32_t next;     // position of the next live node (n: none)
    uint32_t prev;     // position of the previous live node (UINT32_MAX: none)
    int32_t pair_rank; // rank of this node's bytes joined with the next node's, kNoRank if none
  };
  std::vector<Node> nodes;
  std::vector<std::pair<int32_t, uint32_t>> heap;  // (rank, position), a min-heap
  pcre2_match_data* match = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;
  ~Scratch() {
    pcre2_match_data_free(match);
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(jit_stack);
  }
};

TiktokenTokenizer::~TiktokenTokenizer() = default;

TiktokenTokenizer::TiktokenTokenizer(TiktokenRanks ranks, const TiktokenEncoding& encoding,
                                     const std::string& ranks_path)
    : ranks_(std::move(ranks)), specials_(encoding.special_tokens), name_(encoding.name) {
  const std::string file = ranks_path.empty() ? "the ranks file" : ranks_path;
  vocab_size_ = std::max<int64_t>(ranks_.end(), encoding.id_range());
  std::stable_sort(specials_.begin(), specials_.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  special_by_id_.assign(static_cast<size_t>(vocab_size_), {});
  for (const auto& [text, id] : encoding.special_tokens) {
    HT_USAGE_CHECK(!text.empty() && id >= 0, "tiktoken {}: special token '{}' has id {}", name_, text, id);
    HT_USAGE_CHECK(id >= ranks_.end() || ranks_.bytes(id).empty(),
                   "tiktoken {}: {} gives rank {} to a token, but {} is the id of the special token {} (the ranks file "
                   "does not belong to this pattern?)",
                   name_, file, id, id, text);
    if (text == encoding.eot) eot_id_ = id;
  }
  for (const auto& [text, id] : specials_) special_by_id_[static_cast<size_t>(id)] = text;  // views into specials_
  HT_CHECK(eot_id_ >= 0, "tiktoken {}: the document separator {} is not a special token", name_, encoding.eot);

  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  regex_ = std::make_unique<Regex>();
  const std::string pattern = with_unicode_white_space(encoding.pattern);  // \s as tiktoken's regex engine reads it
  regex_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                               PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error_code, &error_offset, nullptr);
  if (regex_->code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error_code, message, sizeof(message));
    HT_USAGE_ERROR("tiktoken {}: PCRE2 rejected the pattern at offset {}: {}", name_, error_offset,
                   reinterpret_cast<const char*>(message));
  }
  pcre2_jit_compile(regex_->code, PCRE2_JIT_COMPLETE);  // when JIT is unavailable, the interpreter runs
}

// tiktoken's merge loop: the parts start as single bytes; find the adjacent pair whose joined
// bytes have the lowest rank (leftmost on a tie), join it, repeat until no pair is a token.
void TiktokenTokenizer::bpe_quadratic(std::string_view piece, Scratch& s, std::vector<int32_t>& out) const {
  const auto n = static_cast<uint32_t>(piece.size());
  auto rank_of = [&](uint32_t begin, uint32_t end) {
    const int32_t r = ranks_.find(piece.substr(begin, end - begin));
    return r == TiktokenRanks::kNone ? kNoRank : r;
  };
  s.starts.resize(n + 1);
  for (uint32_t i = 0; i <= n; ++i) s.starts[i] = i;
  // pair_ranks[i]: parts i and i+1 joined; the last entry is kNoRank, so sizes stay equal.
  s.pair_ranks.resize(n);
  for (uint32_t i = 0; i + 1 < n; ++i) s.pair_ranks[i] = rank_of(i, i + 2);
  s.pair_ranks[n - 1] = kNoRank;
  while (s.pair_ranks.size() > 1) {
    const auto best = std::min_element(s.pair_ranks.begin(), s.pair_ranks.end());
    if (*best == kNoRank) break;
    const auto i = static_cast<size_t>(best - s.pair_ranks.begin());
    s.starts.erase(s.starts.begin() + static_cast<std::ptrdiff_t>(i + 1));
    s.pair_ranks.erase(s.pair_ranks.begin() + static_cast<std::ptrdiff_t>(i + 1));
    const size_t parts = s.pair_ranks.size();
    s.pair_ranks[i] = i + 1 < parts ? rank_of(s.starts[i], s.starts[i + 2]) : kNoRank;
    if (i > 0) s.pair_ranks[i - 1] = rank_of(s.starts[i - 1], s.starts[i + 1]);
  }
  for (size_t i = 0; i + 1 < s.starts.size(); ++i) out.push_back(rank_of(s.starts[i], s.starts[i + 1]));
}

// Note [BPE with a heap]
// The same merges as bpe_quadratic() in O(n log n): live parts form a linked list over byte
// positions, each part's pair rank (with its right neighbour) sits in a min-heap keyed by
// (rank, position). The smallest entry is the quadratic loop's choice: lowest rank, then the
// leftmost pair, since positions grow left to right. An entry is stale when its part was
// absorbed or its pair rank changed; a changed pair never has its old rank again, because a
// rank names one byte string and the part's bytes only grow.
void TiktokenTokenizer::bpe_heap(std::string_view piece, Scratch& s, std::vector<int32_t>& out) const {
  const auto n = static_cast<uint32_t>(piece.size());
  auto rank_of = [&](uint32_t begin, uint32_t end) {
    const int32_t r = ranks_.find(piece.substr(begin, end - begin));
    return r == TiktokenRanks::kNone ? kNoRank : r;
  };
  s.nodes.resize(n);
  s.heap.clear();
  for (uint32_t i = 0; i < n; ++i) {
    s.nodes[i] = {i + 1, i == 0 ? UINT32_MAX : i - 1, i + 1 < n ? rank_of(i, i + 2) : kNoRank};
    if (s.nodes[i].pair_rank != kNoRank) s.heap.emplace_back(s.nodes[i].pair_rank, i);
  }
  const auto later = std::greater<>{};
  std::make_heap(s.heap.begin(), s.heap.end(), later);
  auto end_of_next = [&](uint32_t i) {  // where the part after i ends
    const uint32_t next = s.nodes[i].next;
    return next >= n ? n + 1 : s.nodes[next].next;
  };
  auto refresh = [&](uint32_t i) {
    const uint32_t end = end_of_next(i);
    s.nodes[i].pair_rank = end <= n ? rank_of(i, end) : kNoRank;
    if (s.nodes[i].pair_rank != kNoRank) {
      s.heap.emplace_back(s.nodes[i].pair_rank, i);
      std::push_heap(s.heap.begin(), s.heap.end(), later);
    }
  };
  while (!s.heap.empty()) {
    std::pop_heap(s.heap.begin(), s.heap.end(), later);
    const auto [rank, i] = s.heap.back();
    s.heap.pop_back();
    Scratch::Node& node = s.nodes[i];
    if (node.prev == UINT32_MAX - 1 || node.pair_rank != rank) continue;  // stale
    const uint32_t absorbed = node.next;
    node.next = s.nodes[absorbed].next;
    if (node.next < n) s.nodes[node.next].prev = i;
    s.nodes[absorbed].prev = UINT32_MAX - 1;  // dead
    refresh(i);
    if (node.prev != UINT32_MAX) refresh(node.prev);
  }
  for (uint32_t i = 0; i < n; i = s.nodes[i].next) out.push_back(rank_of(i, s.nodes[i].next));
}

void TiktokenTokenizer::bpe(std::string_view piece, bool quadratic, std::vector<int32_t>& out) const {
  if (piece.empty()) return;
  Scratch scratch;
  if (quadratic) {
    bpe_quadratic(piece, scratch, out);
  } else {
    bpe_heap(piece, scratch, out);
  }
}

void TiktokenTokenizer::encode_piece(std::string_view piece, Scratch& scratch, std::vector<int32_t>& out) const {
  const int32_t whole = ranks_.find(piece);
  if (whole != TiktokenRanks::kNone) {
    out.push_back(whole);
  } else if (piece.size() > kLongPiece) {
    bpe_heap(piece, scratch, out);
  } else {
    bpe_quadratic(piece, scratch, out);
  }
}

// Note [Invalid UTF-8 in tiktoken encode]
// tiktoken's encode() takes a Python str, so it never sees invalid UTF-8; hetu takes bytes.
// The pattern is compiled with PCRE2_MATCH_INVALID_UTF: an ill-formed sequence matches nothing,
// and each maximal run of bytes between two matches goes through the merge loop as a piece of
// its own (tokens for partial characters, like cl100k's "\xe2\x80", still apply). Every byte
// lands in some piece, so decode(encode(s)) == s for any bytes, NULs included. Valid UTF-8
// leaves no such runs (the pattern's alternatives cover every character), so tiktoken's ids are
// unchanged there.
void TiktokenTokenizer::encode_ordinary(std::string_view text, Scratch& s, std::vector<int32_t>& out) const {
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  while (pos < text.size()) {
    const int rc = pcre2_match(regex_->code, subject, text.size(), pos, 0, s.match, s.context);
    size_t begin = text.size(), end = text.size();
    if (rc >= 0) {
      const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(s.match);
      begin = ovector[0], end = ovector[1];
    } else if (rc != PCRE2_ERROR_NOMATCH) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof(message));
      HT_THROW("tiktoken {}: PCRE2 match failed at byte {}: {}", name_, pos, reinterpret_cast<const char*>(message));
    }
    HT_CHECK(rc < 0 || end > begin, "tiktoken {}: the pattern matched empty at byte {}", name_, begin);
    if (begin > pos) encode_piece(text.substr(pos, begin - pos), s, out);  // bytes no match covers
    if (end > begin) encode_piece(text.substr(begin, end - begin), s, out);
    pos = end;
  }
}

namespace {

// Sets up a call's PCRE2 buffers: match data, and a JIT stack that lets long runs of one
// class (a megabyte of spaces) match without running out of stack.
template <typename Scratch>
void prepare_scratch(Scratch& s, const pcre2_code* code) {
  s.match = pcre2_match_data_create_from_pattern(code, nullptr);
  s.context = pcre2_match_context_create(nullptr);
  s.jit_stack = pcre2_jit_stack_create(32 * 1024, 64 * 1024 * 1024, nullptr);
  HT_CHECK(s.match != nullptr && s.context != nullptr && s.jit_stack != nullptr,
           "tiktoken: out of memory for PCRE2 match buffers");
  pcre2_jit_stack_assign(s.context, nullptr, s.jit_stack);
}

}  // namespace

std::vector<int32_t> TiktokenTokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  if (text.empty()) return ids;
  ids.reserve(text.size() / 3 + 16);
  Scratch scratch;
  prepare_scratch(scratch, regex_->code);
  encode_ordinary(text, scratch, ids);
  return ids;
}

// The text between special tokens is encoded as by encode(); at each position the longest
// special token that starts there wins.
std::vector<int32_t> TiktokenTokenizer::encode_with_special(std::string_view text) const {
  std::vector<int32_t> ids;
  if (text.empty()) return ids;
  ids.reserve(text.size() / 3 + 16);
  Scratch scratch;
  prepare_scratch(scratch, regex_->code);
  bool first_byte[256] = {};
  for (const auto& [special, id] : specials_) first_byte[static_cast<unsigned char>(special[0])] = true;
  size_t segment = 0;
  for (size_t pos = 0; pos < text.size(); ++pos) {
    if (!first_byte[static_cast<unsigned char>(text[pos])]) continue;
    for (const auto& [special, id] : specials_) {
      if (text.compare(pos, special.size(), special) != 0) continue;
      encode_ordinary(text.substr(segment, pos - segment), scratch, ids);
      ids.push_back(id);
      segment = pos + special.size();
      pos = segment - 1;
      break;
    }
  }
  encode_ordinary(text.substr(segment), scratch, ids);
  return ids;
}

std::string TiktokenTokenizer::decode(const std::vector<int32_t>& ids) const {
  auto bytes_of = [&](int32_t id, size_t position) {
    std::string_view bytes;
    if (id >= 0 && id < ranks_.end()) bytes = ranks_.bytes(id);
    if (bytes.empty() && id >= 0 && id < vocab_size_) bytes = special_by_id_[static_cast<size_t>(id)];
    HT_USAGE_CHECK(!bytes.empty(), "tiktoken {}: token id {} at position {} is not a token (outside [0, {}) or unused)",
                   name_, id, position, vocab_size_);
    return bytes;
  };
  size_t total = 0;
  for (size_t i = 0; i < ids.size(); ++i) total += bytes_of(ids[i], i).size();
  std::string text;
  text.reserve(total);
  for (size_t i = 0; i < ids.size(); ++i) text += bytes_of(ids[i], i);
  return text;
}

}  // namespace hetu::tokenize
