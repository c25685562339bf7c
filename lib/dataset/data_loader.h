// DataLoader: (x, y) batches from llm.c token shards, deterministic and resumable.
// The shards matching a glob (sorted by name) are cut into windows of T+1 tokens starting at
// 0, T, 2T, ... of each shard (a window never crosses a shard end); x is a window's first T
// tokens, y the last T. An epoch visits every window once, in order ("sequential") or in a
// permutation of (seed, epoch) ("shuffled", see Note [Stateless shuffle]), as consecutive
// global batches of global_batch windows (the N mod global_batch windows left over at the end
// of an epoch are skipped). A data-parallel replica reads its share of each global batch:
// epoch-order positions [share_offset, share_offset + share_count), in micro-batches.
//
// Example: 2 replicas with batch shares 2:3 of a global batch of 5, micro_batch 1 and 3:
//   DataLoader a({.pattern = "data/train_*.bin", .seq_len = 1024, .global_batch = 5,
//                 .share_offset = 0, .share_count = 2, .micro_batch = 1});
//   DataLoader b({... .share_offset = 2, .share_count = 3, .micro_batch = 3});
//   a's next() calls read positions {0}, {1}, {5}, {6}, {10}, ...; b's read {2,3,4}, {7,8,9}, ...
//   Batch x, y are (micro_batch, 1024) i32 tensors; y[i][t] == x[i][t+1] for t < 1023.
//
// packing = documents: whole documents packed per global batch instead (document_batcher.h),
// cost-balanced over the replicas' batch shares (`shares`: every replica's, in order); a
// Batch then carries the segment offsets and the global count of targets.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lib/core/tensor.h"
#include "lib/dataset/document_batcher.h"
#include "lib/dataset/token_shard.h"

namespace hetu::dataset {

enum class Sampling { sequential, shuffled };
enum class Packing { windows, documents };

struct DataLoaderOptions {
  std::string pattern;       // a path or a glob of token shards
  int64_t seq_len = 0;       // T
  int64_t global_batch = 0;  // windows per global batch, all replicas together
  int64_t share_offset = 0;  // this replica reads positions [share_offset, share_offset + share_count)
  int64_t share_count = 0;   // of every global batch; 0: the whole global batch
  int64_t micro_batch = 0;   // sequences per next(); divides share_count; 0: share_count
  Sampling sampling = Sampling::sequential;
  uint64_t seed = 0;  // shuffled only
  Packing packing = Packing::windows;
  // documents only: every replica's share (rows per global batch, in order, summing to
  // global_batch; empty: this share and the rows around it).
  std::vector<int64_t> shares = {};
  int64_t balance_window = 1;  // documents only: global batches formed together (window_packing.h)
};

// Where a loader is: the next global batch of an epoch, and how many sequences of this
// replica's share of it were already read (0 between optimizer steps). num_shards and
// total_tokens fingerprint the data so a position is never restored against other data.
// Packed documents add where that global batch's window starts: the document at epoch
// position `document`, its piece `piece`, and the batch within the window (window_batch).
struct DataPosition {
  int64_t epoch = 0;
  int64_t batch = 0;
  int64_t sequence = 0;
  int64_t num_shards = 0;
  int64_t total_tokens = 0;
  bool documents = false;
  int64_t document = 0;
  int64_t piece = 0;
  int64_t window_batch = 0;

  // "epoch=1 batch=37 sequence=0 shards=4 tokens=400000000" (documents: then " document=D
  // piece=K", and " window_batch=J" when J > 0); parse() is its inverse and rejects anything
  // else with a UsageError.
  std::string to_string() const;
  static DataPosition parse(std::string_view text);
  std::array<int64_t, 5> to_array() const { return {epoch, batch, sequence, num_shards, total_tokens}; }
  static DataPosition from_array(const std::array<int64_t, 5>& values);
  bool operator==(const DataPosition&) const = default;
};

struct Batch {
  Tensor x;  // (micro_batch, T) i32
  Tensor y;  // (micro_batch, T) i32, x shifted left by one token (documents: kIgnoreTarget where none)
  std::vector<int64_t> cu_seqlens = {};  // documents only: segment offsets into the micro_batch · T tokens
  int64_t global_targets = 0;       // documents only: targets of the whole global batch
};

class DataLoader {
 public:
  // A glob with no match, a shard shorter than T+1 tokens, fewer windows than one global
  // batch, or a share outside the global batch is a UsageError naming it.
  explicit DataLoader(const DataLoaderOptions& options);

  Batch next();
  // packing = documents: the whole next global batch, every replica's rows (bucket_batcher.h).
  DocumentBatcher::GlobalBatch next_global_batch();

  DataPosition position() const;
  // The next batches after restore(p) equal those that followed when p was taken. Other data
  // (shard count, token total), a batch past the epoch or a sequence not on a micro-batch
  // boundary of this share is a UsageError naming the mismatch.
  void restore(const DataPosition& position);

  struct Window {
    int64_t shard = 0;
    int64_t start = 0;  // first token in the shard; the window is [start, start + T + 1)
  };
  // The window at epoch-order position p in [0, windows_per_epoch()).
  Window window_at(int64_t epoch, int64_t p) const;

  int64_t windows_per_epoch() const { return window_begin_.back(); }  // windows only
  int64_t batches_per_epoch() const { return windows_per_epoch() / options_.global_batch; }
  const std::vector<TokenShard>& shards() const { return shards_; }
  int64_t total_tokens() const { return total_tokens_; }
  const DocumentBatcher* documents() const { return documents_.get(); }  // packing = documents; else null

 private:
  DataLoaderOptions options_;
  std::vector<TokenShard> shards_;
  std::vector<int64_t> window_begin_;  // shard s holds global windows [window_begin_[s], window_begin_[s+1])
  int64_t total_tokens_ = 0;
  std::unique_ptr<DocumentBatcher> documents_;  // packing = documents
  int64_t epoch_ = 0;
  int64_t batch_ = 0;
  int64_t sequence_ = 0;
};

}  // namespace hetu::dataset
