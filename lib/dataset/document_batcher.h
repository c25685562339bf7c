// DocumentBatcher: the micro-batches of data.packing = "documents". The shards' documents
// (each starts with the separator id the shards record; a shard's end also ends one) are
// visited once per epoch, in order or in a permutation of (seed, epoch) of whole documents,
// as pieces of at most seq_len tokens (a longer document is cut every seq_len tokens). Each
// global batch takes pieces in that order until they fill Σ shares rows of seq_len by next-fit
// (pieces left at the end of an epoch that cannot fill one are skipped), then places them
// cost-balanced over the replicas (document_packing.h). With balance_window = W > 1 the pieces
// of W such batches (fewer where the epoch ends) are re-formed together into W batches,
// balanced over batches × replicas (window_packing.h). Every replica computes the same
// packing and reads its own rows, micro_batch at a time.
//
// In a row, pieces follow each other and the rest is padding: x holds the separator there,
// y holds kIgnoreTarget, and every padding token is a segment of its own. y[t] = x's next
// token of the same document, or kIgnoreTarget at a document's last token (it does not
// predict the next document's first). cu_seqlens are the segment offsets into the flattened
// (micro_batch · seq_len) tokens: 0, ..., every multiple of seq_len, ..., micro_batch · seq_len.
//
//   DocumentBatcher b(shards, {.seq_len = 8, .shares = {1, 1}, .replica = 0, .micro_batch = 1});
//   DocumentBatch m = b.next();   // rows of replica 0; m.global_targets: Σ targets of both replicas
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "lib/dataset/document_packing.h"
#include "lib/dataset/token_shard.h"

namespace hetu::dataset {

inline constexpr int32_t kIgnoreTarget = -100;  // the cross-entropy's ignore_index

struct DocumentBatcherOptions {
  int64_t seq_len = 0;
  std::vector<int64_t> shares = {};  // rows per replica, all replicas in order
  int64_t replica = 0;          // whose rows next() returns
  int64_t micro_batch = 1;      // rows per next(); divides shares[replica]
  bool shuffled = false;
  uint64_t seed = 0;
  int64_t balance_window = 1;   // global batches formed together (window_packing.h), >= 1
};

struct DocumentBatch {
  std::vector<int32_t> x, y;        // (micro_batch, seq_len), row-major
  std::vector<int64_t> cu_seqlens;  // segment offsets, 0 .. micro_batch · seq_len
  int64_t global_targets = 0;       // targets not ignored in the whole global batch, all replicas
};

// Where the batcher is: the first piece of the current window of global batches (the document
// at epoch position `document`, its piece `piece`), the global batch within it (window_batch,
// 0 when balance_window = 1) and the rows of this replica's share already read.
struct DocumentCursor {
  int64_t epoch = 0, batch = 0, document = 0, piece = 0, row = 0, window_batch = 0;
  bool operator==(const DocumentCursor&) const = default;
};

class DocumentBatcher {
 public:
  // shards must outlive the batcher. Shards that record no separator, or too few tokens for
  // one global batch, are a UsageError naming data.packing and the data.
  DocumentBatcher(const std::vector<TokenShard>& shards, const DocumentBatcherOptions& options);

  DocumentBatch next();
  DocumentCursor cursor() const { return cursor_; }
  // next() continues as it did after the cursor was taken; a row off a micro-batch boundary,
  // a document past the data or a window_batch past its window is a UsageError.
  void restore(const DocumentCursor& cursor);

  int64_t documents() const { return static_cast<int64_t>(documents_.size()); }
  std::vector<int64_t> document_lengths() const;  // in shard order, separators included
  int32_t separator() const { return separator_; }

  struct Piece {
    int64_t shard = 0, start = 0, length = 0;
    bool continues = false;  // the document goes on after it: its last token has a target
  };
  struct GlobalBatch {
    std::vector<Piece> pieces;  // in stream order
    PackedBatch packed;         // rows index pieces
    int64_t targets = 0;
  };
  // The global batches of the window that starts at (epoch, document, piece): balance_window
  // of them, fewer when the epoch ends first (none when it ends before one is full), and
  // where the next window starts.
  struct Window {
    std::vector<GlobalBatch> batches;
    int64_t next_document = 0, next_piece = 0;
  };
  Window window(int64_t epoch, int64_t document, int64_t piece) const;
  // The whole next global batch (between two of them only: no row of it read), the cursor
  // moved to the one after; what next() would read over all replicas' rows.
  GlobalBatch next_global_batch();
  // The tokens of `rows` (each a list of indices into `pieces`, at most row_len tokens; 0:
  // seq_len) as next() lays out a micro-batch, in rows of row_len; global_targets is left 0.
  DocumentBatch assemble(std::span<const Piece> pieces, std::span<const std::vector<int64_t>> rows,
                         int64_t row_len = 0) const;

 private:
  struct Document {
    int64_t shard = 0, start = 0, length = 0;
  };
  const Document& document_at(int64_t epoch, int64_t p) const;
  // The pieces next-fit takes into one global batch from (epoch, document, piece), moving
  // them to the next batch's first; empty when the epoch ends first.
  std::vector<Piece> next_fit_batch(int64_t epoch, int64_t& document, int64_t& piece) const;
  void load_batch();  // window_ for cursor_, moving to the next epoch when this one is spent
  void advance();     // cursor_ to the next global batch

  const std::vector<TokenShard>& shards_;
  DocumentBatcherOptions options_;
  int32_t separator_ = -1;
  std::vector<Document> documents_;
  DocumentCursor cursor_;
  Window window_;  // the window cursor_ is in, when loaded_
  bool loaded_ = false;
};

}  // namespace hetu::dataset
