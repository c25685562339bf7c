// DocumentBatcher: document index over the shards, pieces in epoch order, next-fit global
// batches, windows of them balanced together and this replica's micro-batches.
#include "lib/dataset/document_batcher.h"

#include <algorithm>
#include <numeric>

#include "lib/dataset/stateless_shuffle.h"
#include "lib/dataset/window_packing.h"
#include "lib/util/error.h"

namespace hetu::dataset {

DocumentBatcher::DocumentBatcher(const std::vector<TokenShard>& shards, const DocumentBatcherOptions& options)
    : shards_(shards), options_(options) {
  const DocumentBatcherOptions& o = options_;
  HT_USAGE_CHECK(o.seq_len >= 1, "data: seq_len must be >= 1, got {}", o.seq_len);
  HT_USAGE_CHECK(o.replica >= 0 && o.replica < static_cast<int64_t>(o.shares.size()),
                 "data: replica {} of {} batch shares", o.replica, o.shares.size());
  for (int64_t s : o.shares) HT_USAGE_CHECK(s >= 1, "data: a batch share of {} rows", s);
  const int64_t mine = o.shares[static_cast<size_t>(o.replica)];
  HT_USAGE_CHECK(o.micro_batch >= 1 && mine % o.micro_batch == 0,
                 "data: micro_batch {} does not divide the share of {} sequences", o.micro_batch, mine);
  HT_USAGE_CHECK(!shards.empty(), "data: no shards");
  for (const TokenShard& shard : shards) {
    HT_USAGE_CHECK(shard.separator() >= 0,
                   "data.packing = \"documents\": {} records no document boundaries (prepare the data with `hetu "
                   "data prepare`, which starts every document with the tokenizer's end-of-text id and records it)",
                   shard.path());
    HT_USAGE_CHECK(separator_ < 0 || shard.separator() == separator_,
                   "data.packing = \"documents\": {} separates documents with id {}, {} with id {}", shards[0].path(),
                   separator_, shard.path(), shard.separator());
    separator_ = shard.separator();
  }
  for (size_t s = 0; s < shards.size(); ++s) {
    const TokenShard& t = shards[s];
    const int64_t n = t.size();
    int64_t begin = 0;
    for (int64_t i = 1; i <= n; ++i) {
      if (i < n && t[i] != separator_) continue;
      if (i - begin >= 2) documents_.push_back({static_cast<int64_t>(s), begin, i - begin});  // one target at least
      begin = i;
    }
  }
  HT_USAGE_CHECK(!documents_.empty(), "data.packing = \"documents\": {} holds no document of 2 tokens or more",
                 shards[0].path());
  HT_USAGE_CHECK(o.balance_window >= 1, "data.balance_window must be >= 1, got {}", o.balance_window);
  int64_t document = 0, piece = 0;
  const int64_t rows = std::accumulate(o.shares.begin(), o.shares.end(), int64_t{0});
  HT_USAGE_CHECK(!next_fit_batch(0, document, piece).empty(),
                 "data.packing = \"documents\": {} documents ({} shards from {}) do not fill one global batch of {} "
                 "rows of seq_len {}",
                 documents_.size(), shards.size(), shards[0].path(), rows, o.seq_len);
}

std::vector<int64_t> DocumentBatcher::document_lengths() const {
  std::vector<int64_t> out;
  for (const Document& d : documents_) out.push_back(d.length);
  return out;
}

const DocumentBatcher::Document& DocumentBatcher::document_at(int64_t epoch, int64_t p) const {
  const int64_t n = documents();
  HT_CHECK(p >= 0 && p < n, "data: document position {} is outside [0, {})", p, n);
  return documents_[static_cast<size_t>(options_.shuffled ? shuffled_position(options_.seed, epoch, n, p) : p)];
}

std::vector<DocumentBatcher::Piece> DocumentBatcher::next_fit_batch(int64_t epoch, int64_t& document,
                                                                   int64_t& piece) const {
  const int64_t T = options_.seq_len;
  NextFitRows fill(std::accumulate(options_.shares.begin(), options_.shares.end(), int64_t{0}), T);
  std::vector<Piece> out;
  for (;;) {
    if (document == documents()) return {};  // the epoch ends before the batch is full
    const Document& doc = document_at(epoch, document);
    const int64_t start = piece * T, length = std::min(T, doc.length - start);
    if (!fill.add(length)) return out;
    const bool continues = start + length < doc.length;
    out.push_back({doc.shard, doc.start + start, length, continues});
    if (continues) {
      ++piece;
    } else {
      ++document;
      piece = 0;
    }
  }
}

DocumentBatcher::Window DocumentBatcher::window(int64_t epoch, int64_t document, int64_t piece) const {
  std::vector<Piece> pieces;
  int64_t batches = 0;
  Window out{{}, document, piece};
  while (batches < options_.balance_window) {
    const std::vector<Piece> batch = next_fit_batch(epoch, document, piece);
    if (batch.empty()) break;
    pieces.insert(pieces.end(), batch.begin(), batch.end());
    ++batches;
    out.next_document = document;
    out.next_piece = piece;
  }
  if (batches == 0) return out;
  std::vector<int64_t> lengths;
  for (const Piece& p : pieces) lengths.push_back(p.length);
  std::vector<int64_t> micro(options_.shares.size(), 0);
  micro[static_cast<size_t>(options_.replica)] = options_.micro_batch;
  for (WindowBatch& formed : pack_window(lengths, batches, options_.shares, options_.seq_len, micro)) {
    GlobalBatch& batch = out.batches.emplace_back();
    for (int64_t i : formed.pieces) {
      const Piece& p = pieces[static_cast<size_t>(i)];
      batch.pieces.push_back(p);
      batch.targets += p.length - 1 + (p.continues ? 1 : 0);
    }
    batch.packed = std::move(formed.packed);
  }
  return out;
}

void DocumentBatcher::load_batch() {
  window_ = window(cursor_.epoch, cursor_.document, cursor_.piece);
  if (window_.batches.empty()) {  // the rest of this epoch cannot fill a batch: skip it
    HT_CHECK(cursor_.window_batch == 0, "data: window batch {} of an epoch's end", cursor_.window_batch);
    cursor_ = DocumentCursor{cursor_.epoch + 1, 0, 0, 0, cursor_.row, 0};
    window_ = window(cursor_.epoch, 0, 0);
    HT_CHECK(!window_.batches.empty(), "data: epoch {} has no full global batch", cursor_.epoch);
  }
  HT_CHECK(cursor_.window_batch < static_cast<int64_t>(window_.batches.size()), "data: window batch {} of {}",
           cursor_.window_batch, window_.batches.size());
  loaded_ = true;
}

void DocumentBatcher::advance() {
  cursor_.row = 0;
  ++cursor_.batch;
  if (++cursor_.window_batch < static_cast<int64_t>(window_.batches.size())) return;
  cursor_ = DocumentCursor{cursor_.epoch, cursor_.batch, window_.next_document, window_.next_piece, 0, 0};
  loaded_ = false;
}

DocumentBatch DocumentBatcher::assemble(std::span<const Piece> pieces, std::span<const std::vector<int64_t>> rows,
                                        int64_t row_len) const {
  const int64_t T = row_len > 0 ? row_len : options_.seq_len;
  const auto mb = static_cast<int64_t>(rows.size());
  DocumentBatch out;
  out.x.assign(static_cast<size_t>(mb * T), separator_);
  out.y.assign(static_cast<size_t>(mb * T), kIgnoreTarget);
  out.cu_seqlens.push_back(0);
  for (int64_t i = 0; i < mb; ++i) {
    int64_t at = i * T;
    for (int64_t p : rows[static_cast<size_t>(i)]) {
      const Piece& piece = pieces[static_cast<size_t>(p)];
      HT_CHECK(at + piece.length <= (i + 1) * T, "data: row {} holds more than its {} tokens", i, T);
      const TokenShard& shard = shards_[static_cast<size_t>(piece.shard)];
      const int64_t targets = piece.length - 1 + (piece.continues ? 1 : 0);
      shard.copy(piece.start, piece.length, out.x.data() + at);
      shard.copy(piece.start + 1, targets, out.y.data() + at);
      at += piece.length;
      out.cu_seqlens.push_back(at);
    }
    for (; at < (i + 1) * T; ++at) out.cu_seqlens.push_back(at + 1);  // padding: one segment per token
  }
  return out;
}

DocumentBatch DocumentBatcher::next() {
  if (!loaded_) load_batch();
  const int64_t mb = options_.micro_batch;
  int64_t first_row = 0;
  for (int64_t k = 0; k < options_.replica; ++k) first_row += options_.shares[static_cast<size_t>(k)];
  const GlobalBatch& current = window_.batches[static_cast<size_t>(cursor_.window_batch)];
  const auto rows = std::span<const std::vector<int64_t>>(current.packed.rows).subspan(
      static_cast<size_t>(first_row + cursor_.row), static_cast<size_t>(mb));
  DocumentBatch out = assemble(current.pieces, rows);
  out.global_targets = current.targets;
  cursor_.row += mb;
  if (cursor_.row == options_.shares[static_cast<size_t>(options_.replica)]) advance();
  return out;
}

DocumentBatcher::GlobalBatch DocumentBatcher::next_global_batch() {
  HT_CHECK(cursor_.row == 0, "data: a global batch is read whole only between two of them (row {})", cursor_.row);
  if (!loaded_) load_batch();
  GlobalBatch out = window_.batches[static_cast<size_t>(cursor_.window_batch)];
  advance();
  return out;
}

void DocumentBatcher::restore(const DocumentCursor& cursor) {
  HT_USAGE_CHECK(cursor.epoch >= 0 && cursor.batch >= 0 && cursor.document >= 0 && cursor.document < documents() &&
                     cursor.piece >= 0 &&
                     cursor.piece * options_.seq_len < document_at(cursor.epoch, cursor.document).length,
                 "data position: document {} piece {} is not in this data ({} documents, seq_len {})", cursor.document,
                 cursor.piece, documents(), options_.seq_len);
  const int64_t mine = options_.shares[static_cast<size_t>(options_.replica)];
  HT_USAGE_CHECK(cursor.row >= 0 && cursor.row < mine && cursor.row % options_.micro_batch == 0,
                 "data position: sequence {} is not a micro-batch boundary of this share of {} (micro_batch {})",
                 cursor.row, mine, options_.micro_batch);
  HT_USAGE_CHECK(cursor.window_batch >= 0 && cursor.window_batch < options_.balance_window,
                 "data position: global batch {} of a window is outside data.balance_window = {}", cursor.window_batch,
                 options_.balance_window);
  cursor_ = cursor;
  loaded_ = false;
  if (cursor.window_batch > 0) {  // the window must hold it (one cut short by the epoch's end may not)
    window_ = window(cursor.epoch, cursor.document, cursor.piece);
    HT_USAGE_CHECK(cursor.window_batch < static_cast<int64_t>(window_.batches.size()),
                   "data position: the window at document {} piece {} holds {} global batches, not batch {}",
                   cursor.document, cursor.piece, window_.batches.size(), cursor.window_batch);
    loaded_ = true;
  }
}

}  // namespace hetu::dataset
