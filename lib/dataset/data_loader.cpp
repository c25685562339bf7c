// DataLoader: windows over mmapped token shards, sequential or shuffled order, replica shares,
// and positions that save and restore exactly.
#include "lib/dataset/data_loader.h"

#include <glob.h>

#include <algorithm>

#include <fmt/ranges.h>

#include "lib/dataset/stateless_shuffle.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace hetu::dataset {
namespace {

// The files matching pattern, sorted by name; none is a UsageError.
std::vector<std::string> glob_files(const std::string& pattern) {
  glob_t found{};
  const int rc = ::glob(pattern.c_str(), 0, nullptr, &found);
  std::vector<std::string> files;
  if (rc == 0) files.assign(found.gl_pathv, found.gl_pathv + found.gl_pathc);
  ::globfree(&found);
  HT_USAGE_CHECK(rc != GLOB_NOMATCH, "data: no file matches '{}'", pattern);
  HT_USAGE_CHECK(rc == 0, "data: cannot list the files matching '{}' (glob error {})", pattern, rc);
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

// ---- DataPosition ----

std::string DataPosition::to_string() const {
  const std::string text = fmt::format("epoch={} batch={} sequence={} shards={} tokens={}", epoch, batch, sequence,
                                       num_shards, total_tokens);
  if (!documents) return text;
  const std::string window = window_batch > 0 ? fmt::format(" window_batch={}", window_batch) : "";
  return fmt::format("{} document={} piece={}{}", text, document, piece, window);
}

DataPosition DataPosition::parse(std::string_view text) {
  constexpr std::array<std::string_view, 8> kKeys = {"epoch",  "batch",    "sequence", "shards",
                                                     "tokens", "document", "piece",    "window_batch"};
  const std::vector<std::string_view> fields = split(trim(text), ' ');
  std::array<int64_t, 8> values{};
  bool ok = fields.size() == 5 || fields.size() == 7 || fields.size() == 8;
  for (size_t i = 0; ok && i < fields.size(); ++i) {
    const std::vector<std::string_view> kv = split(fields[i], '=');
    const auto value = kv.size() == 2 ? parse_int64(kv[1]) : std::nullopt;
    ok = kv.size() == 2 && kv[0] == kKeys[i] && value.has_value() && *value >= 0;
    if (ok) values[i] = *value;
  }
  HT_USAGE_CHECK(ok,
                 "data position '{}': expected 'epoch=E batch=B sequence=S shards=N tokens=T' (integers >= 0), "
                 "packed documents followed by 'document=D piece=K' (and 'window_batch=J')",
                 text);
  DataPosition p = from_array({values[0], values[1], values[2], values[3], values[4]});
  p.documents = fields.size() >= 7;
  p.document = values[5];
  p.piece = values[6];
  p.window_batch = values[7];
  return p;
}

DataPosition DataPosition::from_array(const std::array<int64_t, 5>& values) {
  return DataPosition{values[0], values[1], values[2], values[3], values[4]};
}

// ---- DataLoader ----

DataLoader::DataLoader(const DataLoaderOptions& options) : options_(options) {
  DataLoaderOptions& o = options_;
  HT_USAGE_CHECK(!o.pattern.empty(), "data: no shard path or glob given");
  HT_USAGE_CHECK(o.seq_len >= 1, "data: seq_len must be >= 1, got {}", o.seq_len);
  HT_USAGE_CHECK(o.global_batch >= 1, "data: global_batch must be >= 1, got {}", o.global_batch);
  if (o.share_count == 0) o.share_count = o.global_batch;
  HT_USAGE_CHECK(o.share_offset >= 0 && o.share_count >= 1 && o.share_offset + o.share_count <= o.global_batch,
                 "data: the share [{}, {}) is not inside a global batch of {}", o.share_offset,
                 o.share_offset + o.share_count, o.global_batch);
  if (o.micro_batch == 0) o.micro_batch = o.share_count;
  HT_USAGE_CHECK(o.micro_batch >= 1 && o.share_count % o.micro_batch == 0,
                 "data: micro_batch {} does not divide the share of {} sequences", o.micro_batch, o.share_count);

  window_begin_.push_back(0);
  const bool documents = o.packing == Packing::documents;
  for (const std::string& file : glob_files(o.pattern)) {
    TokenShard shard(file);
    HT_USAGE_CHECK(documents || shard.size() >= o.seq_len + 1,
                   "{} holds {} tokens, fewer than seq_len + 1 = {}: too short for one sequence", file, shard.size(),
                   o.seq_len + 1);
    total_tokens_ += shard.size();
    window_begin_.push_back(window_begin_.back() + (shard.size() - 1) / o.seq_len);
    shards_.push_back(std::move(shard));
  }
  if (documents) {
    DocumentBatcherOptions d{o.seq_len, o.shares, 0, o.micro_batch, o.sampling == Sampling::shuffled, o.seed,
                             o.balance_window};
    if (d.shares.empty()) {  // this share between the rows before and after it
      if (o.share_offset > 0) d.shares.push_back(o.share_offset);
      d.shares.push_back(o.share_count);
      if (o.share_offset + o.share_count < o.global_batch) d.shares.push_back(o.global_batch - o.share_offset - o.share_count);
    }
    int64_t offset = 0;
    d.replica = -1;
    for (size_t k = 0; k < d.shares.size(); offset += d.shares[k], ++k) {
      if (offset == o.share_offset && d.shares[k] == o.share_count) d.replica = static_cast<int64_t>(k);
    }
    HT_USAGE_CHECK(d.replica >= 0 && offset == o.global_batch,
                   "data: the shares {} do not hold [{}, {}) of a global batch of {}", fmt::join(d.shares, ","),
                   o.share_offset, o.share_offset + o.share_count, o.global_batch);
    documents_ = std::make_unique<DocumentBatcher>(shards_, d);
    return;
  }
  HT_USAGE_CHECK(windows_per_epoch() >= o.global_batch,
                 "data: '{}' holds {} windows of seq_len + 1 = {} tokens, fewer than one global batch of {}",
                 o.pattern, windows_per_epoch(), o.seq_len + 1, o.global_batch);
}

DataLoader::Window DataLoader::window_at(int64_t epoch, int64_t p) const {
  const int64_t n = windows_per_epoch();
  HT_CHECK(epoch >= 0 && p >= 0 && p < n, "data: position {} of epoch {} is outside [0, {})", p, epoch, n);
  const int64_t w = options_.sampling == Sampling::shuffled ? shuffled_position(options_.seed, epoch, n, p) : p;
  // The last shard whose first window is <= w (shards hold >= 1 window, so begins are strictly increasing).
  const auto it = std::upper_bound(window_begin_.begin(), window_begin_.end(), w) - 1;
  const auto shard = static_cast<int64_t>(it - window_begin_.begin());
  return Window{shard, (w - *it) * options_.seq_len};
}

Batch DataLoader::next() {
  const int64_t b = options_.micro_batch, t = options_.seq_len;
  if (documents_) {
    DocumentBatch d = documents_->next();
    Batch out{empty({b, t}, DType::i32), empty({b, t}, DType::i32), std::move(d.cu_seqlens), d.global_targets};
    std::copy(d.x.begin(), d.x.end(), out.x.data<int32_t>());
    std::copy(d.y.begin(), d.y.end(), out.y.data<int32_t>());
    return out;
  }
  Batch out{empty({b, t}, DType::i32), empty({b, t}, DType::i32), {}, 0};
  int32_t* x = out.x.data<int32_t>();
  int32_t* y = out.y.data<int32_t>();
  for (int64_t i = 0; i < b; ++i) {
    const int64_t p = batch_ * options_.global_batch + options_.share_offset + sequence_ + i;
    const Window window = window_at(epoch_, p);
    const TokenShard& shard = shards_[window.shard];  // T + 1 tokens from window.start
    shard.copy(window.start, t, x + i * t);
    shard.copy(window.start + 1, t, y + i * t);
  }
  sequence_ += b;
  if (sequence_ == options_.share_count) {
    sequence_ = 0;
    if (++batch_ == batches_per_epoch()) {
      batch_ = 0;
      ++epoch_;
    }
  }
  return out;
}

DocumentBatcher::GlobalBatch DataLoader::next_global_batch() {
  HT_CHECK(documents_ != nullptr, "data: whole global batches are read with packing = documents only");
  return documents_->next_global_batch();
}

DataPosition DataLoader::position() const {
  const auto shards = static_cast<int64_t>(shards_.size());
  if (documents_) {
    const DocumentCursor c = documents_->cursor();
    return DataPosition{c.epoch, c.batch, c.row, shards, total_tokens_, true, c.document, c.piece, c.window_batch};
  }
  return DataPosition{epoch_, batch_, sequence_, shards, total_tokens_};
}

void DataLoader::restore(const DataPosition& position) {
  const auto num_shards = static_cast<int64_t>(shards_.size());
  HT_USAGE_CHECK(position.num_shards == num_shards && position.total_tokens == total_tokens_,
                 "data position ({}) was saved for {} shards holding {} tokens, but '{}' matches {} shards holding {} "
                 "tokens",
                 position.to_string(), position.num_shards, position.total_tokens, options_.pattern, num_shards,
                 total_tokens_);
  HT_USAGE_CHECK(position.documents == (documents_ != nullptr),
                 "data position ({}) was saved with data.packing = \"{}\", but this run packs {}", position.to_string(),
                 position.documents ? "documents" : "windows", documents_ ? "documents" : "windows");
  if (documents_) {
    documents_->restore(
        {position.epoch, position.batch, position.document, position.piece, position.sequence, position.window_batch});
    return;
  }
  HT_USAGE_CHECK(
      position.epoch >= 0 && position.batch >= 0 && position.batch < batches_per_epoch(),
      "data position ({}): epoch must be >= 0 and batch in [0, {}) for this data, seq_len {} and global_batch {}",
      position.to_string(), batches_per_epoch(), options_.seq_len, options_.global_batch);
  HT_USAGE_CHECK(position.sequence >= 0 && position.sequence < options_.share_count &&
                     position.sequence % options_.micro_batch == 0,
                 "data position ({}): sequence is not a micro-batch boundary of this share of {} (micro_batch {})",
                 position.to_string(), options_.share_count, options_.micro_batch);
  epoch_ = position.epoch;
  batch_ = position.batch;
  sequence_ = position.sequence;
}

}  // namespace hetu::dataset
