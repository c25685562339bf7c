// Tests for data.packing = "documents" (lib/dataset/document_batcher via DataLoader): shards written
// here hold documents whose tokens name them (document d's tokens are 1000·d + i after the
// separator 0), so every row can be checked against the documents cut here: each epoch
// visits every document once, whole or in seq_len pieces, targets stop at each document's
// end, the offsets mark every document and padding token; replicas read disjoint rows that
// together hold the global batch; a restored position gives the same batches as the
// uninterrupted run; data without recorded boundaries is an error naming data.packing.
// Buckets (bucket_batcher.h): a step's buckets hold exactly the pieces of the global batch the
// plain loader reads, each in the bucket of its length, and resume at the same batches.
// data.balance_window (window_packing.h): a window's batches hold exactly the pieces of as
// many stream-order batches, each once, none emptier; restoring inside a window is exact;
// buckets ignore the window.
#include "lib/dataset/bucket_batcher.h"
#include "lib/dataset/data_loader.h"

#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "lib/dataset/token_shard.h"
#include "lib/util/error.h"
#include "tests/temp_dir.h"

using namespace hetu;
using namespace hetu::dataset;

namespace {

using hetu::test::TempDir;

// Documents of the given lengths (separator included) over shards of `per_shard` documents.
std::vector<std::vector<int32_t>> write_documents(const TempDir& dir, const std::vector<int64_t>& lengths,
                                                  size_t per_shard, int32_t separator = 0) {
  std::vector<std::vector<int32_t>> docs;
  std::vector<int32_t> shard;
  int index = 0;
  for (size_t d = 0; d < lengths.size(); ++d) {
    std::vector<int32_t> doc = {separator};
    for (int64_t i = 1; i < lengths[d]; ++i) doc.push_back(static_cast<int32_t>(1000 * (d + 1) + i));  // < 65536 for 60 documents
    docs.push_back(doc);
    shard.insert(shard.end(), doc.begin(), doc.end());
    if ((d + 1) % per_shard == 0 || d + 1 == lengths.size()) {
      write_token_shard(dir.file("train_" + std::to_string(index++) + ".bin"), shard, separator);
      shard.clear();
    }
  }
  return docs;
}

std::vector<int64_t> lengths_for_test() {
  std::vector<int64_t> out;
  for (int64_t d = 0; d < 60; ++d) out.push_back(2 + (d * 7919) % 23);  // 2..24 tokens
  out[5] = 40;                                                           // longer than seq_len 16
  return out;
}

DataLoaderOptions options(const TempDir& dir, int64_t offset, int64_t count, int64_t micro, bool shuffled,
                          int64_t window = 1) {
  DataLoaderOptions o;
  o.pattern = dir.file("train_*.bin");
  o.seq_len = 16;
  o.global_batch = 6;
  o.share_offset = offset;
  o.share_count = count;
  o.micro_batch = micro;
  o.sampling = shuffled ? Sampling::shuffled : Sampling::sequential;
  o.seed = 3;
  o.packing = Packing::documents;
  o.shares = {2, 4};
  o.balance_window = window;
  return o;
}

struct Segment {
  std::vector<int32_t> x, y;
};

// The segments of one micro-batch, from its offsets; checks the offsets' invariants.
std::vector<Segment> segments(const Batch& b, int64_t T) {
  const std::vector<int32_t> x(b.x.data<int32_t>(), b.x.data<int32_t>() + b.x.numel());
  const std::vector<int32_t> y(b.y.data<int32_t>(), b.y.data<int32_t>() + b.y.numel());
  const std::vector<int64_t>& c = b.cu_seqlens;
  REQUIRE(c.front() == 0);
  REQUIRE(c.back() == b.x.numel());
  for (int64_t m = 0; m <= b.x.numel(); m += T) CHECK(std::count(c.begin(), c.end(), m) == 1);
  std::vector<Segment> out;
  for (size_t s = 0; s + 1 < c.size(); ++s) {
    REQUIRE(c[s] < c[s + 1]);
    out.push_back({std::vector<int32_t>(x.begin() + c[s], x.begin() + c[s + 1]),
                   std::vector<int32_t>(y.begin() + c[s], y.begin() + c[s + 1])});
  }
  return out;
}

}  // namespace

TEST_CASE("packed documents: whole documents or seq_len pieces, targets within each, once per epoch", "[documents]") {
  TempDir dir("documents-epoch");
  const std::vector<std::vector<int32_t>> docs = write_documents(dir, lengths_for_test(), 7);
  for (bool shuffled : {false, true}) {
    INFO("shuffled " << shuffled);
    DataLoader a(options(dir, 0, 2, 1, shuffled)), b(options(dir, 2, 4, 2, shuffled));
    std::map<int32_t, std::map<int32_t, std::vector<int32_t>>> seen;  // document -> its pieces by first index
    int64_t targets = 0, global = 0;
    // Read the first epoch's batches only (a second would revisit documents).
    for (int step = 0; step < 4; ++step) {
      std::vector<Batch> batches = {a.next(), a.next(), b.next(), b.next()};
      for (const Batch& m : batches) {
        global = m.global_targets;
        for (const Segment& s : segments(m, 16)) {
          if (s.x.size() == 1 && s.y[0] == kIgnoreTarget && s.x[0] == 0) continue;  // padding
          // Targets are the next tokens of the same document.
          for (size_t i = 0; i + 1 < s.x.size(); ++i) CHECK(s.y[i] == s.x[i + 1]);
          for (int32_t t : s.y) targets += t != kIgnoreTarget ? 1 : 0;
          const int32_t first = s.x[0] == 0 ? 0 : s.x[0] % 1000;  // the piece's index in its document
          const int32_t doc = (s.x[0] == 0 ? s.x[1] : s.x[0]) / 1000 - 1;
          REQUIRE(doc >= 0);
          const std::vector<int32_t>& whole = docs[static_cast<size_t>(doc)];
          const size_t end = static_cast<size_t>(first) + s.x.size();
          REQUIRE(end <= whole.size());
          if (end == whole.size()) CHECK(s.y.back() == kIgnoreTarget);  // the document ends: no target
          else CHECK(s.y.back() == whole[end]);                          // a piece: its document goes on
          CHECK(seen[doc].count(first) == 0);
          seen[doc][first] = s.x;
        }
      }
      CHECK(targets == global);  // the global count is the sum over every replica's rows
      targets = 0;
    }
    int cut = 0;  // documents whose later pieces fall in a batch not read (the last one read may cut one)
    for (const auto& [doc, pieces] : seen) {
      INFO("document " << doc);
      std::vector<int32_t> joined;
      for (const auto& [first, piece] : pieces) joined.insert(joined.end(), piece.begin(), piece.end());
      const std::vector<int32_t>& whole = docs[static_cast<size_t>(doc)];
      REQUIRE(joined.size() <= whole.size());
      CHECK(std::equal(joined.begin(), joined.end(), whole.begin()));  // every piece once, none missing before
      cut += joined.size() < whole.size() ? 1 : 0;
    }
    CHECK(cut <= 1);
    CHECK(seen.size() >= 20);
  }
}

TEST_CASE("packed documents: a restored position continues with the same batches", "[documents]") {
  TempDir dir("documents-resume");
  write_documents(dir, lengths_for_test(), 9);
  for (auto [shuffled, window] : {std::pair{false, 1}, {true, 1}, {false, 3}, {true, 3}}) {
    INFO("shuffled " << shuffled << ", balance_window " << window);
    DataLoader run(options(dir, 2, 4, 2, shuffled, window));
    std::vector<DataPosition> positions;
    std::vector<std::vector<int32_t>> rows;
    for (int i = 0; i < 40; ++i) {  // past the end of an epoch
      positions.push_back(run.position());
      const Batch b = run.next();
      rows.emplace_back(b.x.data<int32_t>(), b.x.data<int32_t>() + b.x.numel());
    }
    CHECK(positions.back().epoch >= 1);
    int64_t mid_window = 0;  // positions inside a window (batch 1 or 2 of it)
    for (size_t from : {size_t{1}, size_t{4}, size_t{6}, size_t{10}, size_t{23}, size_t{37}}) {
      INFO("from " << from << ": " << positions[from].to_string());
      mid_window += positions[from].window_batch > 0 ? 1 : 0;
      DataLoader resumed(options(dir, 2, 4, 2, shuffled, window));
      resumed.restore(DataPosition::parse(positions[from].to_string()));
      for (size_t i = from; i < rows.size(); ++i) {
        const Batch b = resumed.next();
        CHECK(std::vector<int32_t>(b.x.data<int32_t>(), b.x.data<int32_t>() + b.x.numel()) == rows[i]);
      }
    }
    CHECK((window == 1 ? mid_window == 0 : mid_window >= 2));
    if (window > 1) {  // a batch past the window
      DataPosition past = positions[4];
      past.window_batch = window;
      DataLoader resumed(options(dir, 2, 4, 2, shuffled, window));
      CHECK_THROWS_WITH(resumed.restore(past), Catch::Contains("outside data.balance_window = 3"));
    }
    DataLoader windows(DataLoaderOptions{.pattern = dir.file("train_*.bin"), .seq_len = 4, .global_batch = 2});
    CHECK_THROWS_WITH(windows.restore(positions[3]), Catch::Contains("data.packing = \"documents\""));
  }
}

namespace {

// One global batch read by both replicas (shares 2 and 4, micro-batches of 1 and 2): its
// non-padding segments (x, y), its tokens in them, and checks that the global target count
// both replicas were given is the targets of all their rows.
struct Step {
  std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>> segments;
  int64_t tokens = 0;
};
Step read_step(DataLoader& a, DataLoader& b) {
  Step out;
  int64_t targets = 0;
  std::vector<int64_t> global;
  for (const Batch& m : {a.next(), a.next(), b.next(), b.next()}) {
    global.push_back(m.global_targets);
    for (const Segment& s : segments(m, 16)) {
      if (s.x.size() == 1 && s.y[0] == kIgnoreTarget && s.x[0] == 0) continue;  // padding
      out.segments.emplace_back(s.x, s.y);
      out.tokens += static_cast<int64_t>(s.x.size());
      for (int32_t t : s.y) targets += t != kIgnoreTarget ? 1 : 0;
    }
  }
  for (int64_t g : global) CHECK(g == targets);
  return out;
}

}  // namespace

TEST_CASE("balance window: its batches hold the pieces of as many stream-order batches, each once, as full",
          "[documents]") {
  TempDir dir("documents-window");
  write_documents(dir, lengths_for_test(), 7);
  for (auto [shuffled, window] : {std::pair{false, 2}, {true, 2}, {false, 3}, {true, 3}}) {
    INFO("shuffled " << shuffled << ", balance_window " << window);
    // Each replica forms the window on its own: were they to differ, pieces would go missing or twice.
    DataLoader a(options(dir, 0, 2, 1, shuffled, window)), b(options(dir, 2, 4, 2, shuffled, window));
    DataLoader stream_a(options(dir, 0, 2, 1, shuffled)), stream_b(options(dir, 2, 4, 2, shuffled));
    for (int w = 0; w < 2; ++w) {  // two windows, both in the first epoch
      INFO("window " << w);
      std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>> formed, stream;
      int64_t least_stream = 16 * 6, least_formed = 16 * 6;
      for (int i = 0; i < window; ++i) {
        CHECK(a.position().window_batch == i);
        const Step f = read_step(a, b), s = read_step(stream_a, stream_b);
        formed.insert(formed.end(), f.segments.begin(), f.segments.end());
        stream.insert(stream.end(), s.segments.begin(), s.segments.end());
        least_formed = std::min(least_formed, f.tokens);
        least_stream = std::min(least_stream, s.tokens);
      }
      std::sort(formed.begin(), formed.end());
      std::sort(stream.begin(), stream.end());
      CHECK(formed == stream);  // the same pieces, each once, over the window's batches
      CHECK(std::adjacent_find(formed.begin(), formed.end()) == formed.end());
      CHECK(least_formed >= least_stream);  // no batch emptier than next-fit leaves one
      CHECK(a.position() == stream_a.position());
    }
    CHECK(a.position().epoch == 0);
  }
}

TEST_CASE("packed documents need shards that record their boundaries", "[documents]") {
  TempDir dir("documents-unmarked");
  std::vector<int32_t> tokens(200, 7);
  write_token_shard(dir.file("train_0.bin"), tokens);  // no separator recorded (llm.c's own shards)
  CHECK_THROWS_AS(DataLoader(options(dir, 0, 2, 1, false)), UsageError);
  CHECK_THROWS_WITH(DataLoader(options(dir, 0, 2, 1, false)),
                    Catch::Contains("data.packing = \"documents\": " + dir.file("train_0.bin") +
                                    " records no document boundaries"));
}

namespace {

// The non-padding segments of every micro-batch of a bucketed step, each checked to be in
// the bucket of its length and in a row of the bucket's row length: 16 halved while the
// bucket's longest piece fits the half (a full round: every replica running row_factor x its
// micro-batches of that many shorter rows; the last round of a bucket only as many as it
// needs, each replica at least one, at most one per replica of padding only): (x, y) sorted,
// for comparison with the plain loader's step.
std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>> bucketed_step(BucketBatcher& batcher,
                                                                                 const std::vector<BucketShape>& shapes,
                                                                                 int64_t& global_targets) {
  batcher.next_step();
  global_targets = batcher.global_targets();
  std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>> out;
  for (int64_t k = 0; k < batcher.buckets(); ++k) {
    const BucketShape& shape = shapes[static_cast<size_t>(k)];
    const int64_t lo = k == 0 ? 0 : shapes[static_cast<size_t>(k - 1)].max_len;
    const int64_t hi = shape.max_len == 0 ? 16 : shape.max_len;
    const int64_t factor = batcher.row_factor(k), row = 16 / factor;
    CHECK(16 % factor == 0);
    int64_t longest = 0;
    for (int64_t r = 0; r < batcher.rounds(k); ++r) {
      const bool last = r + 1 == batcher.rounds(k);
      int64_t padding_only = 0;  // micro-batches; a trimmed round rounds each replica up by less than one
      for (size_t replica = 0; replica < shape.shares.size(); ++replica) {
        const int64_t mb = shape.micro_batch[replica];
        const int64_t count = batcher.micro_batches(k, r, static_cast<int64_t>(replica));
        CHECK(count >= 1);
        CHECK(count <= factor * shape.shares[replica] / mb);
        if (!last) CHECK(count == factor * shape.shares[replica] / mb);
        for (int64_t i = 0; i < count; ++i) {
          bool data = false;
          const DocumentBatch d = batcher.micro_batch(k, r, static_cast<int64_t>(replica), i);
          CHECK(d.global_targets == global_targets);
          REQUIRE(d.x.size() == static_cast<size_t>(mb * row));
          Batch b{empty({mb, row}, DType::i32), empty({mb, row}, DType::i32), d.cu_seqlens, d.global_targets};
          std::copy(d.x.begin(), d.x.end(), b.x.data<int32_t>());
          std::copy(d.y.begin(), d.y.end(), b.y.data<int32_t>());
          for (const Segment& s : segments(b, row)) {
            if (s.x.size() == 1 && s.y[0] == kIgnoreTarget && s.x[0] == 0) continue;  // padding
            INFO("bucket " << k << ", a piece of " << s.x.size() << " tokens");
            CHECK((static_cast<int64_t>(s.x.size()) > lo && static_cast<int64_t>(s.x.size()) <= hi));
            longest = std::max(longest, static_cast<int64_t>(s.x.size()));
            out.emplace_back(s.x, s.y);
            data = true;
          }
          if (!data) ++padding_only;
        }
        CHECK_THROWS(batcher.micro_batch(k, r, static_cast<int64_t>(replica), count));
      }
      CHECK(padding_only <= static_cast<int64_t>(shape.shares.size()));
    }
    int64_t expected = 16;  // halved while the half holds the bucket's longest piece
    while (batcher.rounds(k) > 0 && expected % 2 == 0 && expected / 2 >= longest) expected /= 2;
    CHECK(row == expected);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("packed documents in buckets: the global batch's pieces once each, in the bucket of their length",
          "[documents]") {
  TempDir dir("documents-buckets");
  write_documents(dir, lengths_for_test(), 7);
  const std::vector<BucketShape> shapes = {{5, {3, 3}, {1, 1}, "a"}, {10, {6}, {2}, "b"}, {0, {2, 4}, {1, 2}, "c"}};
  for (bool shuffled : {false, true}) {
    INFO("shuffled " << shuffled);
    DataLoaderOptions whole = options(dir, 0, 6, 6, shuffled);
    whole.shares = {6};
    DataLoader plain(whole);
    // Buckets ignore data.balance_window: their global batches are the stream-order ones.
    BucketBatcher buckets(options(dir, 0, 2, 1, shuffled, /*window=*/3), shapes);
    std::vector<DataPosition> positions;
    std::vector<std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>>> steps;
    for (int step = 0; step < 20; ++step) {  // past the end of an epoch
      INFO("step " << step);
      positions.push_back(buckets.position());
      CHECK(positions.back() == plain.position());
      const Batch b = plain.next();
      std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>> expected;
      for (const Segment& s : segments(b, 16)) {
        if (!(s.x.size() == 1 && s.y[0] == kIgnoreTarget && s.x[0] == 0)) expected.emplace_back(s.x, s.y);
      }
      std::sort(expected.begin(), expected.end());
      int64_t global = 0;
      steps.push_back(bucketed_step(buckets, shapes, global));
      CHECK(steps.back() == expected);
      CHECK(global == b.global_targets);
    }
    CHECK(positions.back().epoch >= 1);
    BucketBatcher resumed(options(dir, 0, 2, 1, shuffled, 3), shapes);
    resumed.restore(DataPosition::parse(positions[7].to_string()));
    for (size_t i = 7; i < steps.size(); ++i) {
      int64_t global = 0;
      CHECK(bucketed_step(resumed, shapes, global) == steps[i]);
    }
  }
}

TEST_CASE("packed documents in planned buckets: each step's plan sees its pieces' lengths and cuts its batch",
          "[documents]") {
  TempDir dir("documents-planned-buckets");
  write_documents(dir, lengths_for_test(), 7);
  DataLoaderOptions whole = options(dir, 0, 6, 6, false);
  whole.shares = {6};
  DataLoader plain(whole);
  std::vector<int64_t> seen;             // the lengths the plan was given, this step
  std::vector<BucketShape> planned;      // what it returned
  // A plan that changes with the batch: one bucket up to the median length (under "short"),
  // the rest under "long" (one bucket when every piece has the median's length).
  BucketBatcher buckets(options(dir, 0, 2, 1, false), [&](std::span<const int64_t> lengths) {
    seen.assign(lengths.begin(), lengths.end());
    std::vector<int64_t> sorted = seen;
    std::sort(sorted.begin(), sorted.end());
    const int64_t median = sorted[sorted.size() / 2];
    planned.clear();
    if (median < sorted.back()) planned.push_back({median, {3, 3}, {1, 1}, "short"});
    planned.push_back({0, {2, 4}, {1, 2}, "long"});
    return planned;
  });
  for (int step = 0; step < 8; ++step) {
    INFO("step " << step);
    const Batch b = plain.next();
    std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>> expected;
    std::vector<int64_t> lengths;
    for (const Segment& s : segments(b, 16)) {
      if (s.x.size() == 1 && s.y[0] == kIgnoreTarget && s.x[0] == 0) continue;
      expected.emplace_back(s.x, s.y);
      lengths.push_back(static_cast<int64_t>(s.x.size()));
    }
    std::sort(expected.begin(), expected.end());
    int64_t global = 0;
    const auto got = bucketed_step(buckets, planned, global);  // reads the step first, then plans
    CHECK(got == expected);
    CHECK(global == b.global_targets);
    std::sort(lengths.begin(), lengths.end());
    std::vector<int64_t> given = seen;
    std::sort(given.begin(), given.end());
    CHECK(given == lengths);
    REQUIRE(buckets.buckets() == static_cast<int64_t>(planned.size()));
    for (int64_t k = 0; k < buckets.buckets(); ++k) CHECK(buckets.shape(k).strategy == planned[static_cast<size_t>(k)].strategy);
  }
}

TEST_CASE("packed rows: a bucket's pieces fill rows as next-fit in stream order does", "[documents]") {
  // By hand, rows of 64: 40 | 30 | 40 | 30 (each pair overflows), 30 30 | 40, 64 | 1, 1 1 62.
  CHECK(packed_rows(std::vector<int64_t>{40, 30, 40, 30}, 64) == 4);
  CHECK(packed_rows(std::vector<int64_t>{30, 30, 40}, 64) == 2);
  CHECK(packed_rows(std::vector<int64_t>{64, 1}, 64) == 2);
  CHECK(packed_rows(std::vector<int64_t>{1, 1, 62}, 64) == 1);
  CHECK(packed_rows(std::vector<int64_t>{}, 64) == 0);
}
