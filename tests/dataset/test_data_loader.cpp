// Tests for lib/dataset/data_loader: batches equal slices cut here from the token arrays the test
// wrote; every token value is unique, so a batch row names the window it came from. Epochs
// cover every window once (sequential and shuffled), positions restore exactly, replicas with
// uneven shares read disjoint windows, and bad data or options are errors naming the cause.
#include "lib/dataset/data_loader.h"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include "lib/dataset/token_shard.h"
#include "lib/util/error.h"
#include "tests/temp_dir.h"

namespace fs = std::filesystem;
using namespace hetu;
using namespace hetu::dataset;

namespace {

using hetu::test::TempDir;

using Row = std::vector<int32_t>;

// Shards with the given token counts under dir, named so that creation order differs from name
// order; token values count up from 1 across the shards in name order, so each is unique.
// Returns the token arrays in name order.
std::vector<Row> make_shards(const TempDir& dir, const std::vector<int64_t>& sizes, const std::string& prefix = "s") {
  std::vector<Row> shards;
  int32_t next = 1;
  for (int64_t size : sizes) {
    Row tokens(static_cast<size_t>(size));
    for (int32_t& t : tokens) t = next++;
    shards.push_back(tokens);
  }
  for (size_t i = shards.size(); i-- > 0;)
    write_token_shard(dir.file(prefix + "_" + std::to_string(10 + i) + ".bin"), shards[i]);
  return shards;
}

// Every window of the shards in epoch order, cut independently: [k*T, k*T + T + 1) while it fits.
std::vector<Row> all_windows(const std::vector<Row>& shards, int64_t t) {
  std::vector<Row> windows;
  for (const Row& tokens : shards) {
    for (size_t start = 0; start + static_cast<size_t>(t) + 1 <= tokens.size(); start += static_cast<size_t>(t)) {
      windows.emplace_back(tokens.begin() + static_cast<std::ptrdiff_t>(start),
                           tokens.begin() + static_cast<std::ptrdiff_t>(start) + t + 1);
    }
  }
  return windows;
}

// The batch as windows of T+1 tokens (x's row plus y's last token), after checking the
// tensors' type, shape and that y is x shifted by one.
std::vector<Row> rows_of(const Batch& batch, int64_t b, int64_t t) {
  REQUIRE(batch.x.dtype() == DType::i32);
  REQUIRE(batch.y.dtype() == DType::i32);
  REQUIRE(batch.x.shape() == Shape{b, t});
  REQUIRE(batch.y.shape() == Shape{b, t});
  const int32_t* x = batch.x.data<int32_t>();
  const int32_t* y = batch.y.data<int32_t>();
  std::vector<Row> rows;
  for (int64_t i = 0; i < b; ++i) {
    Row row(x + i * t, x + (i + 1) * t);
    row.push_back(y[i * t + t - 1]);
    for (int64_t k = 0; k + 1 < t; ++k) CHECK(y[i * t + k] == x[i * t + k + 1]);
    rows.push_back(row);
  }
  return rows;
}

// The next `count` windows a loader yields, micro-batch after micro-batch.
std::vector<Row> read_windows(DataLoader& loader, int64_t count, int64_t b, int64_t t) {
  std::vector<Row> out;
  while (static_cast<int64_t>(out.size()) < count) {
    for (Row& row : rows_of(loader.next(), b, t)) out.push_back(std::move(row));
  }
  return out;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const UsageError& error) {
    return error.message();
  }
  return "no error";
}

}  // namespace

TEST_CASE("sequential batches are consecutive windows of the shards in name order", "[data_loader]") {
  TempDir dir("sequential");
  // T = 4: 13 tokens hold 3 windows (0..4, 4..8, 8..12), 9 hold 2, 20 hold 4 (token 19 unused).
  const std::vector<Row> shards = make_shards(dir, {13, 9, 20});
  const std::vector<Row> windows = all_windows(shards, 4);
  REQUIRE(windows.size() == 9);
  DataLoader loader({.pattern = dir.file("*.bin"), .seq_len = 4, .global_batch = 3});
  CHECK(loader.windows_per_epoch() == 9);
  CHECK(loader.batches_per_epoch() == 3);
  CHECK(loader.total_tokens() == 42);
  REQUIRE(loader.shards().size() == 3);
  CHECK(loader.shards()[0].path() == dir.file("s_10.bin"));

  // Two epochs: the second starts again at the first shard.
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (int batch = 0; batch < 3; ++batch) {
      const std::vector<Row> rows = rows_of(loader.next(), 3, 4);
      for (int i = 0; i < 3; ++i) CHECK(rows[static_cast<size_t>(i)] == windows[static_cast<size_t>(batch * 3 + i)]);
    }
  }
  CHECK(loader.position().epoch == 2);
}

TEST_CASE("an epoch skips the windows left over after its last whole global batch", "[data_loader]") {
  TempDir dir("remainder");
  const std::vector<Row> windows = all_windows(make_shards(dir, {13, 9, 20}), 4);
  DataLoader loader({.pattern = dir.file("*.bin"), .seq_len = 4, .global_batch = 2, .micro_batch = 1});
  CHECK(loader.batches_per_epoch() == 4);
  const std::vector<Row> two_epochs = read_windows(loader, 16, 1, 4);
  for (size_t i = 0; i < 16; ++i) CHECK(two_epochs[i] == windows[i % 8]);  // window 8 is skipped
}

TEST_CASE("shuffled epochs visit every window exactly once in a new order each epoch", "[data_loader]") {
  TempDir dir("shuffled");
  const std::vector<Row> windows = all_windows(make_shards(dir, {13, 9, 20, 101}), 4);
  const auto n = static_cast<int64_t>(windows.size());
  REQUIRE(n == 34);
  const std::set<Row> every(windows.begin(), windows.end());
  DataLoaderOptions options{.pattern = dir.file("*.bin"), .seq_len = 4, .global_batch = 2,
                            .sampling = Sampling::shuffled, .seed = 1234};
  DataLoader loader(options);
  std::vector<std::vector<Row>> epochs;
  for (int epoch = 0; epoch < 3; ++epoch) {
    epochs.push_back(read_windows(loader, n, 2, 4));
    CHECK(std::set<Row>(epochs.back().begin(), epochs.back().end()) == every);  // n distinct windows of the data
  }
  CHECK(epochs[0] != windows);
  CHECK(epochs[0] != epochs[1]);
  CHECK(epochs[1] != epochs[2]);

  // The order is a function of (seed, epoch): a second loader agrees, another seed does not.
  DataLoader again(options);
  CHECK(read_windows(again, n, 2, 4) == epochs[0]);
  options.seed = 1235;
  DataLoader other_seed(options);
  CHECK(read_windows(other_seed, n, 2, 4) != epochs[0]);
}

TEST_CASE("the shuffle is a permutation for every window count", "[data_loader]") {
  for (int64_t n : {1, 2, 3, 4, 5, 7, 16, 17, 63, 64, 65, 100}) {
    TempDir dir("permutation_" + std::to_string(n));
    const std::vector<Row> windows = all_windows(make_shards(dir, {2 * n + 1}), 2);
    DataLoader loader({.pattern = dir.file("*.bin"), .seq_len = 2, .global_batch = 1,
                       .sampling = Sampling::shuffled, .seed = 7});
    const std::vector<Row> epoch = read_windows(loader, n, 1, 2);
    INFO("n = " << n);
    CHECK(std::set<Row>(epoch.begin(), epoch.end()) == std::set<Row>(windows.begin(), windows.end()));
    CHECK(loader.position().epoch == 1);
  }
}

TEST_CASE("a restored position reproduces the following batches", "[data_loader]") {
  TempDir dir("restore");
  make_shards(dir, {13, 9, 20, 101});
  DataLoaderOptions options{.pattern = dir.file("*.bin"), .seq_len = 4, .global_batch = 3, .micro_batch = 1,
                            .sampling = Sampling::shuffled, .seed = 99};
  DataLoader loader(options);
  const DataPosition start = loader.position();
  CHECK(start == DataPosition{0, 0, 0, 4, 143});
  CHECK(start.to_string() == "epoch=0 batch=0 sequence=0 shards=4 tokens=143");

  // 34 windows: 11 global batches of 3 per epoch. Stop after 10 batches and one sequence.
  read_windows(loader, 3 * 10 + 1, 1, 4);
  const DataPosition mid = loader.position();
  CHECK(mid == DataPosition{0, 10, 1, 4, 143});
  const std::vector<Row> following = read_windows(loader, 40, 1, 4);  // through epoch 1 into epoch 2

  DataLoader resumed(options);
  resumed.restore(DataPosition::parse(mid.to_string()));
  CHECK(resumed.position() == mid);
  CHECK(read_windows(resumed, 40, 1, 4) == following);
  DataLoader from_ints(options);
  from_ints.restore(DataPosition::from_array(mid.to_array()));
  CHECK(read_windows(from_ints, 40, 1, 4) == following);

  // A sequential loader too, restored at an optimizer-step boundary.
  options.sampling = Sampling::sequential;
  DataLoader seq(options);
  read_windows(seq, 6, 1, 4);
  const DataPosition step = seq.position();
  CHECK(step == DataPosition{0, 2, 0, 4, 143});
  const std::vector<Row> after = read_windows(seq, 12, 1, 4);
  DataLoader seq_resumed(options);
  seq_resumed.restore(step);
  CHECK(read_windows(seq_resumed, 12, 1, 4) == after);
}

TEST_CASE("restoring a position against other data is an error naming the mismatch", "[data_loader]") {
  TempDir dir("restore_mismatch");
  make_shards(dir, {13, 9, 20});
  make_shards(dir, {13, 9, 20, 5}, "t");
  const DataLoaderOptions options{.pattern = dir.file("s_*.bin"), .seq_len = 4, .global_batch = 3, .micro_batch = 1};
  DataLoader loader(options);
  DataLoader other({.pattern = dir.file("t_*.bin"), .seq_len = 4, .global_batch = 3, .micro_batch = 1});
  loader.next();
  const DataPosition saved = loader.position();
  CHECK(error_of([&] { other.restore(saved); }) ==
        "data position (epoch=0 batch=0 sequence=1 shards=3 tokens=42) was saved for 3 shards holding 42 tokens, "
        "but '" + dir.file("t_*.bin") + "' matches 4 shards holding 47 tokens");

  CHECK_THAT(error_of([&] { loader.restore({0, 3, 0, 3, 42}); }),
             Catch::Contains("batch in [0, 3) for this data, seq_len 4 and global_batch 3"));
  DataLoader whole({.pattern = dir.file("s_*.bin"), .seq_len = 4, .global_batch = 3});
  CHECK_THAT(error_of([&] { whole.restore(saved); }),
             Catch::Contains("sequence is not a micro-batch boundary of this share of 3 (micro_batch 3)"));

  CHECK_THAT(error_of([] { DataPosition::parse("epoch=1 batch=2"); }),
             Catch::Contains("expected 'epoch=E batch=B sequence=S shards=N tokens=T'"));
  CHECK_THROWS_AS(DataPosition::parse("epoch=1 batch=x sequence=0 shards=3 tokens=42"), UsageError);
  CHECK_THROWS_AS(DataPosition::parse("batch=1 epoch=2 sequence=0 shards=3 tokens=42"), UsageError);
  CHECK_THROWS_AS(DataPosition::parse("epoch=-1 batch=2 sequence=0 shards=3 tokens=42"), UsageError);
  // Packed documents: the window's first document and piece, and the batch within the window.
  const DataPosition in_window =
      DataPosition::parse("epoch=1 batch=7 sequence=2 shards=3 tokens=42 document=5 piece=1 window_batch=2");
  CHECK((in_window.documents && in_window.document == 5 && in_window.piece == 1 && in_window.window_batch == 2));
  CHECK(DataPosition::parse(in_window.to_string()) == in_window);
  CHECK(DataPosition::parse("epoch=1 batch=7 sequence=2 shards=3 tokens=42 document=5 piece=1").window_batch == 0);
  CHECK_THROWS_AS(DataPosition::parse("epoch=1 batch=7 sequence=2 shards=3 tokens=42 document=5 piece=1 window=2"),
                  UsageError);
}

TEST_CASE("replicas with uneven shares read disjoint windows that make up the global batches", "[data_loader]") {
  TempDir dir("replicas");
  const std::vector<Row> windows = all_windows(make_shards(dir, {13, 9, 20, 101}), 4);  // 34 windows
  const std::string pattern = dir.file("*.bin");
  for (Sampling sampling : {Sampling::sequential, Sampling::shuffled}) {
    // Global batch 5 (6 per epoch, 4 windows skipped): replica a takes 2 in micro-batches of 1,
    // replica b takes 3 in one micro-batch.
    DataLoader a({.pattern = pattern, .seq_len = 4, .global_batch = 5, .share_offset = 0, .share_count = 2,
                  .micro_batch = 1, .sampling = sampling, .seed = 5});
    DataLoader b({.pattern = pattern, .seq_len = 4, .global_batch = 5, .share_offset = 2, .share_count = 3,
                  .sampling = sampling, .seed = 5});
    DataLoader whole({.pattern = pattern, .seq_len = 4, .global_batch = 5, .sampling = sampling, .seed = 5});
    std::set<Row> seen;
    for (int step = 0; step < 6; ++step) {
      std::vector<Row> global = read_windows(a, 2, 1, 4);
      for (Row& row : rows_of(b.next(), 3, 4)) global.push_back(row);
      CHECK(global == rows_of(whole.next(), 5, 4));  // a's share, then b's, is the global batch
      for (const Row& row : global) CHECK(seen.insert(row).second);  // never read twice in the epoch
    }
    CHECK(seen.size() == 30);
    CHECK(a.position() == DataPosition{1, 0, 0, 4, 143});
    CHECK(b.position() == DataPosition{1, 0, 0, 4, 143});
    if (sampling == Sampling::sequential) {
      CHECK(seen == std::set<Row>(windows.begin(), windows.begin() + 30));
    }
  }
}

TEST_CASE("bad data and options are UsageErrors naming the cause", "[data_loader]") {
  TempDir dir("errors");
  make_shards(dir, {13, 4});
  const std::string none = dir.file("nothing_*.bin");
  CHECK(error_of([&] { DataLoader({.pattern = none, .seq_len = 4, .global_batch = 1}); }) ==
        "data: no file matches '" + none + "'");
  CHECK(error_of([&] { DataLoader({.pattern = dir.file("missing.bin"), .seq_len = 4, .global_batch = 1}); }) ==
        "data: no file matches '" + dir.file("missing.bin") + "'");
  // s_11.bin holds 4 tokens: one sequence of T = 4 needs 5.
  CHECK(error_of([&] { DataLoader({.pattern = dir.file("*.bin"), .seq_len = 4, .global_batch = 1}); }) ==
        dir.file("s_11.bin") + " holds 4 tokens, fewer than seq_len + 1 = 5: too short for one sequence");
  CHECK(error_of([&] { DataLoader({.pattern = dir.file("s_10.bin"), .seq_len = 4, .global_batch = 4}); }) ==
        "data: '" + dir.file("s_10.bin") +
            "' holds 3 windows of seq_len + 1 = 5 tokens, fewer than one global batch of 4");
  CHECK_NOTHROW(DataLoader({.pattern = dir.file("s_10.bin"), .seq_len = 3, .global_batch = 4}));

  const std::string one = dir.file("s_10.bin");
  auto error_for = [](const DataLoaderOptions& options) { return error_of([&] { DataLoader loader(options); }); };
  CHECK(error_for({.pattern = one, .seq_len = 2, .global_batch = 4, .share_offset = 3, .share_count = 2}) ==
        "data: the share [3, 5) is not inside a global batch of 4");
  CHECK(error_for({.pattern = one, .seq_len = 2, .global_batch = 4, .share_count = 3, .micro_batch = 2}) ==
        "data: micro_batch 2 does not divide the share of 3 sequences");
  CHECK(error_for({.pattern = one, .seq_len = 0, .global_batch = 4}) == "data: seq_len must be >= 1, got 0");
  // A corrupt shard reports the shard's own error.
  std::ofstream(dir.file("s_12.bin")) << "not a shard";
  CHECK_THAT(error_of([&] { DataLoader({.pattern = dir.file("s_1[02].bin"), .seq_len = 4, .global_batch = 1}); }),
             Catch::StartsWith(dir.file("s_12.bin") + ": 11 bytes, shorter than the 1024-byte header"));
}
