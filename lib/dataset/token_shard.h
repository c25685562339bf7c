// Token shards in llm.c's format: a 256-int32 little-endian header (magic 20240520, version,
// token count) followed by `count` tokens: version 1 uint16 (a file is exactly 1024 + 2*count
// bytes), version 2 uint32 (1024 + 4*count), for tokenizers with ids past 65535 (tiktoken's
// cl100k, o200k, Llama 3). A shard is written as version 1 when every id fits 16 bits, else as
// version 2, and read as either.
// write_token_shard() writes one atomically; TokenShard maps one read-only and validates it;
// prepare_token_shards() turns text files into val/train shards (the work of `hetu data prepare`).
// Document boundaries: `hetu data prepare` starts every document with the tokenizer's
// separator id and records that id in header slots 3-4 (kShardDocumentsMagic, then the id;
// llm.c leaves them 0 and reads only slots 0-2), which data.packing = "documents" requires.
//
//   write_token_shard("data/train_000000.bin", {50256, 15496, 995});   // 1030 bytes
//   TokenShard shard("data/train_000000.bin");
//   shard.size() == 3;  shard.token(1) == 15496;  shard[2] == 995;
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/tokenize/tokenizer.h"

namespace hetu::dataset {

constexpr int32_t kShardMagic = 20240520;
constexpr int32_t kShardVersion = 1;      // uint16 tokens
constexpr int32_t kShardVersionWide = 2;  // uint32 tokens
constexpr size_t kShardHeaderBytes = 256 * sizeof(int32_t);
constexpr int32_t kShardDocumentsMagic = 20251201;  // header[3]: header[4] is the document separator id

// Every id must be >= 0: a UsageError names the first one that is not. Version 1 when every
// id is below 65536, else version 2.
// separator >= 0: the tokens' documents each start with it (recorded in the header).
void write_token_shard(const std::string& path, const std::vector<int32_t>& tokens, int32_t separator = -1);

// A read-only memory map of one shard; move-only. A file that is not a valid shard (short
// header, bad magic, a version other than 1 or 2, size != 1024 + width*count) is a UsageError
// naming it.
class TokenShard {
 public:
  explicit TokenShard(const std::string& path);
  ~TokenShard();
  TokenShard(TokenShard&& other) noexcept;
  TokenShard& operator=(TokenShard&& other) noexcept;
  TokenShard(const TokenShard&) = delete;
  TokenShard& operator=(const TokenShard&) = delete;

  const std::string& path() const { return path_; }
  int64_t size() const { return size_; }  // tokens
  int32_t token(int64_t i) const;  // bounds-checked
  int32_t operator[](int64_t i) const {  // unchecked
    return wide_ ? static_cast<int32_t>(static_cast<const uint32_t*>(tokens_)[i]) : static_cast<const uint16_t*>(tokens_)[i];
  }
  // Tokens [start, start + count) into out (unchecked, like operator[]).
  void copy(int64_t start, int64_t count, int32_t* out) const;
  int32_t version() const { return wide_ ? kShardVersionWide : kShardVersion; }
  // The id every document starts with, as recorded by `hetu data prepare`; -1: none recorded.
  int32_t separator() const { return separator_; }

 private:
  void unmap() noexcept;

  std::string path_;
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  const void* tokens_ = nullptr;
  bool wide_ = false;  // uint32 tokens (version 2)
  int64_t size_ = 0;
  int32_t separator_ = -1;
};

struct PrepareSummary {
  int64_t documents = 0;
  int32_t separator = -1;  // the id each document starts with (the tokenizer's eot_id)
  int64_t tokens = 0;  // val + train
  int64_t val_tokens = 0;
  int64_t train_tokens = 0;
  std::vector<std::string> files;  // written, in order: val_000000.bin (if any), train_*.bin
};

// Tokenizes each input (a file; "-" is stdin) as one document, or as several when
// document_start is a regular expression (ECMAScript): every line it matches starts a new
// document. Each document is prefixed with the tokenizer's eot_id (llm.c's convention: every
// document, the first included, starts with <|endoftext|>; the byte tokenizer's is 0, NUL),
// and the shards record it as their separator. A document whose text encodes to the
// separator itself (a NUL byte under the byte tokenizer) is a UsageError naming the input. The first val_tokens tokens go to out_dir/val_000000.bin, the rest to
// out_dir/train_000000.bin, train_000001.bin, ... of shard_tokens each (the last may be
// shorter). out_dir is created if missing; it must hold no *.bin file. Inputs that cannot be
// read, or too few tokens to leave any for training, are UsageErrors; on any error the shards
// written so far (and out_dir, if this call created it) are removed.
PrepareSummary prepare_token_shards(const tokenize::Tokenizer& tokenizer, const std::vector<std::string>& inputs,
                                    const std::string& out_dir, int64_t val_tokens, int64_t shard_tokens,
                                    const std::string& document_start = "");

}  // namespace hetu::dataset
