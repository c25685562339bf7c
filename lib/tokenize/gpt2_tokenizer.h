// GPT-2's byte-level BPE tokenizer, exactly as OpenAI's encoder.py: bytes_to_unicode, the
// pre-tokenisation regex (PCRE2, JIT when available), merges by lowest rank. Loads
// encoder.json and vocab.bpe from a directory; every problem with them is a UsageError naming
// the file. encode() reads text literally: "<|endoftext|>" in the text is 13 bytes of ordinary
// text, never eot_id(). Invalid UTF-8 is accepted: see Note [Invalid UTF-8 in GPT-2 encode].
//
//   Gpt2Tokenizer tok("tests/data/gpt2");
//   tok.encode(" Hello world") == {18435, 995};  tok.decode({18435, 995}) == " Hello world";
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lib/tokenize/tokenizer.h"

namespace hetu::tokenize {

class Gpt2Tokenizer final : public Tokenizer {
 public:
  explicit Gpt2Tokenizer(const std::string& vocab_dir);
  ~Gpt2Tokenizer() override;
  Gpt2Tokenizer(const Gpt2Tokenizer&) = delete;
  Gpt2Tokenizer& operator=(const Gpt2Tokenizer&) = delete;

  // Thread-safe (const, no shared mutable state); the piece cache lives for one call, so
  // pass long texts in one call rather than word by word.
  std::vector<int32_t> encode(std::string_view text) const override;
  std::string decode(const std::vector<int32_t>& ids) const override;
  int64_t vocab_size() const override { return static_cast<int64_t>(id_to_bytes_.size()); }
  int32_t eot_id() const override { return eot_id_; }

  // The merge loop on one pre-tokenised piece (any bytes), no cache. `reference` is GPT-2's
  // loop verbatim (merge every occurrence of the lowest-ranked pair, repeat); otherwise the
  // heap version that encode() uses for long pieces. Public so tests can compare the two.
  std::vector<int32_t> bpe(std::string_view piece, bool reference) const;

 private:
  struct Merge {
    int32_t rank;
    int32_t id;  // the merged token
  };
  struct Regex;  // the compiled PCRE2 pattern

  // Construction steps; file problems are UsageErrors naming the file.
  std::unordered_map<std::string, int32_t> load_encoder(const std::string& path);  // -> bytes to id
  void load_merges(const std::string& path, const std::unordered_map<std::string, int32_t>& bytes_to_id);
  void check_merge_order();

  const Merge* find_merge(int32_t left, int32_t right) const;
  void bpe_reference(std::string_view piece, std::vector<int32_t>& symbols) const;
  void bpe_heap(std::string_view piece, std::vector<int32_t>& symbols) const;

  std::vector<std::string> id_to_bytes_;       // id -> the bytes it stands for
  int32_t byte_to_id_[256] = {};               // the single-byte tokens
  std::unordered_map<uint64_t, Merge> merges_;  // (left id << 32 | right id) -> merge
  // Every merge is ranked after the merges that made its two halves (true for GPT-2's
  // vocab.bpe); bpe_heap() equals the reference only then. See Note [BPE with a heap].
  bool merges_causal_ = true;
  int32_t eot_id_ = -1;
  std::unique_ptr<Regex> regex_;
};

}  // namespace hetu::tokenize
