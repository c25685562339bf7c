// BucketBatcher: a global batch's pieces by length into buckets, next-fit rounds, balanced rows.
#include "lib/dataset/bucket_batcher.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "lib/pipeline/bucket_rows.h"
#include "lib/util/error.h"

namespace hetu::dataset {
namespace {

DataLoaderOptions whole_batch(DataLoaderOptions o) {
  HT_USAGE_CHECK(o.packing == Packing::documents, "parallel.bucket: buckets need data.packing = \"documents\"");
  o.share_offset = 0;
  o.share_count = o.global_batch;
  o.micro_batch = o.global_batch;
  o.shares = {o.global_batch};
  o.balance_window = 1;  // buckets form each global batch in stream order (bucket_batcher.h)
  return o;
}

}  // namespace

double packed_rows(std::span<const int64_t> pieces, int64_t row_length) {
  NextFitRows fill(std::numeric_limits<int64_t>::max(), row_length);
  for (int64_t length : pieces) fill.add(length);
  return static_cast<double>(fill.rows_used());
}

BucketBatcher::BucketBatcher(const DataLoaderOptions& data, std::vector<BucketShape> buckets)
    : loader_(whole_batch(data)), seq_len_(data.seq_len), buckets_(std::move(buckets)), global_batch_(data.global_batch) {
  check_buckets();
}

BucketBatcher::BucketBatcher(const DataLoaderOptions& data, BucketPlanFn plan)
    : loader_(whole_batch(data)), seq_len_(data.seq_len), plan_(std::move(plan)), global_batch_(data.global_batch) {
  HT_CHECK(plan_ != nullptr, "buckets: no bucket plan given");
}

void BucketBatcher::check_buckets() const {
  HT_CHECK(!buckets_.empty(), "buckets: none given");
  for (size_t b = 0; b < buckets_.size(); ++b) {
    const BucketShape& s = buckets_[b];
    const bool last = b + 1 == buckets_.size();
    HT_CHECK(last == (s.max_len == 0) && (b == 0 || last || s.max_len > buckets_[b - 1].max_len),
             "buckets: bucket {} has max_len {}: every bucket but the last needs one, increasing", b, s.max_len);
    HT_CHECK(std::accumulate(s.shares.begin(), s.shares.end(), int64_t{0}) == global_batch_ &&
                 s.micro_batch.size() == s.shares.size(),
             "buckets: bucket {}'s replicas do not share the global batch of {}", b, global_batch_);
  }
}

int64_t BucketBatcher::rounds(int64_t bucket) const {
  return static_cast<int64_t>(rounds_.at(static_cast<size_t>(bucket)).size());
}

int64_t BucketBatcher::row_factor(int64_t bucket) const { return row_factor_.at(static_cast<size_t>(bucket)); }

int64_t BucketBatcher::micro_batches(int64_t bucket, int64_t round, int64_t replica) const {
  const Round& r = rounds_.at(static_cast<size_t>(bucket)).at(static_cast<size_t>(round));
  return r.shares.at(static_cast<size_t>(replica)) / buckets_[static_cast<size_t>(bucket)].micro_batch.at(static_cast<size_t>(replica));
}

void BucketBatcher::next_step() {
  const DocumentBatcher::GlobalBatch batch = loader_.next_global_batch();
  global_targets_ = batch.targets;
  if (plan_) {
    std::vector<int64_t> lengths;
    lengths.reserve(batch.pieces.size());
    for (const DocumentBatcher::Piece& p : batch.pieces) lengths.push_back(p.length);
    buckets_ = plan_(lengths);
    check_buckets();
  }
  rounds_.assign(buckets_.size(), {});
  std::vector<std::vector<DocumentBatcher::Piece>> by_bucket(buckets_.size());
  for (const DocumentBatcher::Piece& p : batch.pieces) {
    size_t b = 0;
    while (b + 1 < buckets_.size() && p.length > buckets_[b].max_len) ++b;
    by_bucket[b].push_back(p);
  }
  row_factor_.assign(buckets_.size(), 1);
  for (size_t b = 0; b < buckets_.size(); ++b) {
    const BucketShape& shape = buckets_[b];
    int64_t longest = by_bucket[b].empty() ? seq_len_ : 1;  // an empty bucket: rows of seq_len
    for (const DocumentBatcher::Piece& p : by_bucket[b]) longest = std::max(longest, p.length);
    const int64_t factor = pipeline::bucket_row_factor(seq_len_, longest), row_len = seq_len_ / factor;
    row_factor_[b] = factor;
    std::vector<int64_t> shares = shape.shares;
    for (int64_t& share : shares) share *= factor;
    const int64_t rows = std::accumulate(shares.begin(), shares.end(), int64_t{0});
    std::vector<Round>& rounds = rounds_[b];
    std::vector<int64_t> lengths;
    NextFitRows fill(rows, row_len);
    auto close = [&] {  // a round its rows fill: each replica's share of them, whole micro-batches
      Round& round = rounds.back();
      round.shares = shares;
      if (const int64_t used = fill.rows_used(); used < rows) {
        for (size_t r = 0; r < shares.size(); ++r) {
          const int64_t mb = shape.micro_batch[r];
          round.shares[r] = mb * ((used * shares[r] + rows * mb - 1) / (rows * mb));
        }
      }
      round.packed = pack_balanced(lengths, round.shares, row_len, shape.micro_batch);
      lengths.clear();
    };
    for (const DocumentBatcher::Piece& p : by_bucket[b]) {
      if (rounds.empty() || !fill.add(p.length)) {
        if (!rounds.empty()) close();
        rounds.emplace_back();
        fill = NextFitRows(rows, row_len);
        fill.add(p.length);
      }
      rounds.back().pieces.push_back(p);
      lengths.push_back(p.length);
    }
    if (!rounds.empty()) close();
  }
}

DocumentBatch BucketBatcher::micro_batch(int64_t bucket, int64_t round, int64_t replica, int64_t index) const {
  const BucketShape& shape = buckets_.at(static_cast<size_t>(bucket));
  const Round& r = rounds_.at(static_cast<size_t>(bucket)).at(static_cast<size_t>(round));
  const int64_t mb = shape.micro_batch.at(static_cast<size_t>(replica));
  const int64_t factor = row_factor(bucket);
  const int64_t first = std::accumulate(r.shares.begin(), r.shares.begin() + replica, int64_t{0}) + index * mb;
  HT_CHECK(index >= 0 && (index + 1) * mb <= r.shares.at(static_cast<size_t>(replica)),
           "buckets: replica {} has no micro-batch {}", replica, index);
  const auto rows = std::span<const std::vector<int64_t>>(r.packed.rows).subspan(static_cast<size_t>(first),
                                                                                 static_cast<size_t>(mb));
  DocumentBatch out = loader_.documents()->assemble(r.pieces, rows, seq_len_ / factor);
  out.global_targets = global_targets_;
  return out;
}

}  // namespace hetu::dataset
