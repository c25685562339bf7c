// A tiktoken-format byte-level BPE tokenizer: a ranks file (tiktoken_ranks.h), an encoding's
// pattern and special tokens (tiktoken_encoding.h). encode() splits the text with the pattern
// (PCRE2, UTF + UCP, JIT when available; \s as Unicode's White_Space, white_space_pattern.h)
// and merges each piece's bytes lowest rank first, as tiktoken does; it gives tiktoken's ids on
// any valid UTF-8 and reads special-token text as plain text. The Unicode classes are those of
// the system PCRE2 (10.42: Unicode 14); characters assigned later can split differently from
// tiktoken. encode_with_special() also turns the special tokens' text into their ids.
// Invalid UTF-8 is accepted: see Note [Invalid UTF-8 in tiktoken encode].
//
//   TiktokenTokenizer tok(load_tiktoken_ranks("cl100k_base.tiktoken"), builtin_tiktoken_encoding("cl100k"));
//   tok.encode("Hello, world!") == {9906, 11, 1917, 0};
//   tok.encode_with_special("<|endoftext|>") == {100257};
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lib/tokenize/tiktoken_encoding.h"
#include "lib/tokenize/tiktoken_ranks.h"
#include "lib/tokenize/tokenizer.h"

namespace hetu::tokenize {

class TiktokenTokenizer final : public Tokenizer {
 public:
  // A special id that is also a rank, or an eot that is not a special token, is a UsageError
  // naming `ranks_path`.
  TiktokenTokenizer(TiktokenRanks ranks, const TiktokenEncoding& encoding, const std::string& ranks_path = "");
  ~TiktokenTokenizer() override;
  TiktokenTokenizer(const TiktokenTokenizer&) = delete;
  TiktokenTokenizer& operator=(const TiktokenTokenizer&) = delete;

  // Thread-safe (const, no shared mutable state).
  std::vector<int32_t> encode(std::string_view text) const override;
  std::vector<int32_t> encode_with_special(std::string_view text) const override;
  std::string decode(const std::vector<int32_t>& ids) const override;
  int64_t vocab_size() const override { return vocab_size_; }
  int32_t eot_id() const override { return eot_id_; }

  // The merge loop on one piece (any bytes), appending its ids. `quadratic`: the plain loop
  // (scan for the lowest-ranked pair, merge, repeat); otherwise the heap loop that encode()
  // uses for long pieces. Public so tests can compare the two.
  void bpe(std::string_view piece, bool quadratic, std::vector<int32_t>& out) const;

 private:
  struct Regex;
  struct Scratch;  // per-call buffers

  void encode_ordinary(std::string_view text, Scratch& scratch, std::vector<int32_t>& out) const;
  void encode_piece(std::string_view piece, Scratch& scratch, std::vector<int32_t>& out) const;
  void bpe_quadratic(std::string_view piece, Scratch& scratch, std::vector<int32_t>& out) const;
  void bpe_heap(std::string_view piece, Scratch& scratch, std::vector<int32_t>& out) const;

  TiktokenRanks ranks_;
  std::vector<std::pair<std::string, int32_t>> specials_;  // longest text first
  std::vector<std::string_view> special_by_id_;           // id -> special text ("": none)
  int64_t vocab_size_ = 0;
  int32_t eot_id_ = -1;
  std::string name_;
  std::unique_ptr<Regex> regex_;
};

}  // namespace hetu::tokenize
