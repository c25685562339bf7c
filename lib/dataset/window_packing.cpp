// Window packing: the window's pieces spread over batches × replicas under a token budget per
// batch, then each batch packed cost-balanced over its replicas.
#include "lib/dataset/window_packing.h"

#include <algorithm>
#include <numeric>

#include "lib/util/error.h"

namespace hetu::dataset {
namespace {

// Whether the pieces fit `rows` rows of seq_len, first-fit decreasing (what pack_balanced
// falls back to when its greedy strands a piece).
bool fits_rows(std::vector<int64_t> lengths, int64_t rows, int64_t seq_len) {
  std::sort(lengths.begin(), lengths.end(), std::greater<>());
  std::vector<int64_t> room(static_cast<size_t>(rows), seq_len);
  for (int64_t length : lengths) {
    const auto it = std::find_if(room.begin(), room.end(), [&](int64_t r) { return r >= length; });
    if (it == room.end()) return false;
    *it -= length;
  }
  return true;
}

// Which batch of the window each piece joins (Note [Balance window]); empty when the greedy
// finds no room for a piece, or leaves a batch without pieces or with pieces that do not fit
// its rows first-fit decreasing.
std::vector<int64_t> spread(std::span<const int64_t> lengths, int64_t batches, std::span<const int64_t> shares,
                            int64_t seq_len) {
  const auto n = static_cast<int64_t>(shares.size());
  const int64_t rows = std::accumulate(shares.begin(), shares.end(), int64_t{0});
  const int64_t tokens = std::accumulate(lengths.begin(), lengths.end(), int64_t{0});
  const int64_t budget = (tokens + batches - 1) / batches;  // tokens per batch, rounded up
  std::vector<int64_t> order(lengths.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return lengths[static_cast<size_t>(a)] > lengths[static_cast<size_t>(b)];
  });
  std::vector<int64_t> batch_of(lengths.size(), -1), batch_tokens(static_cast<size_t>(batches), 0);
  std::vector<int64_t> replica_tokens(static_cast<size_t>(batches * n), 0);
  std::vector<double> load(static_cast<size_t>(batches * n), 0.0);  // Σ L² per (batch, replica)
  for (int64_t i : order) {
    const int64_t length = lengths[static_cast<size_t>(i)];
    const double cost = PackingCost::attention(length);
    int64_t best = -1;
    bool best_over = false;
    double best_score = 0;
    for (int64_t v = 0; v < batches * n; ++v) {
      const int64_t share = shares[static_cast<size_t>(v % n)];
      if (replica_tokens[static_cast<size_t>(v)] + length > share * seq_len) continue;
      const bool over = batch_tokens[static_cast<size_t>(v / n)] + length > budget;
      const double score = (load[static_cast<size_t>(v)] + cost) / static_cast<double>(share);
      if (best < 0 || (!over && best_over) || (over == best_over && score < best_score)) {
        best = v;
        best_over = over;
        best_score = score;
      }
    }
    if (best < 0) return {};
    batch_of[static_cast<size_t>(i)] = best / n;
    batch_tokens[static_cast<size_t>(best / n)] += length;
    replica_tokens[static_cast<size_t>(best)] += length;
    load[static_cast<size_t>(best)] += cost;
  }
  for (int64_t b = 0; b < batches; ++b) {
    std::vector<int64_t> mine;
    for (size_t i = 0; i < lengths.size(); ++i)
      if (batch_of[i] == b) mine.push_back(lengths[i]);
    if (mine.empty() || !fits_rows(mine, rows, seq_len)) return {};
  }
  return batch_of;
}

// The batches next-fit forms in stream order (the window's pieces fill them, in order).
std::vector<int64_t> stream_batches(std::span<const int64_t> lengths, int64_t batches, int64_t rows, int64_t seq_len) {
  std::vector<int64_t> batch_of;
  int64_t b = 0;
  NextFitRows fill(rows, seq_len);
  for (int64_t length : lengths) {
    if (!fill.add(length)) {
      fill = NextFitRows(rows, seq_len);
      HT_CHECK(++b < batches && fill.add(length), "packing: the window's pieces overflow {} global batches", batches);
    }
    batch_of.push_back(b);
  }
  return batch_of;
}

}  // namespace

// Note [Balance window]
// Within one global batch the balanced packing (Note [Balanced packing]) is near its lower
// bound; the batch itself is the limit: next-fit in stream order can hand one batch five
// documents of seq_len tokens for four replicas, and then some replica holds two (Note
// [Packing balance bound]). A window takes the pieces of W next-fit batches in stream order
// and spreads them over the W × n (batch, replica) pairs, longest first, each to the pair whose
// attention per share row, (Σ L² + this piece's) / share, would be least among those whose
// replica still has tokens to spare (share · seq_len) and, first choice, whose batch stays
// within the token budget (the window's tokens / W, rounded up; over it only when no batch
// within it has room): the long pieces spread over the whole window, the short ones fill
// every batch to about the same token count. Each batch's pieces, in stream order, are then
// packed cost-balanced over its replicas (pack_balanced: the pair assignment only chose the
// batch). The window keeps the stream-order batches (W = 1's, which always fit) instead when
// the spread strands a piece, leaves a batch empty, or with pieces that fit its rows not even
// first-fit decreasing, or with fewer tokens than the emptiest stream-order batch, or is not
// more even: its batches' attention max/mean, summed, must be below theirs (on long-tailed
// documents whose single batches are already within 1% of even the spread can come out a
// little worse). So no batch is emptier, and no window less even, than W = 1's. Every loader
// computes the same window from the same lengths, and a window depends on its first piece
// only (the cursor names it and the batch within it). W = 1 is pack_balanced's batch.
std::vector<WindowBatch> pack_window(std::span<const int64_t> lengths, int64_t batches,
                                     std::span<const int64_t> shares, int64_t seq_len,
                                     std::span<const int64_t> micro_batch) {
  HT_CHECK(batches >= 1, "packing: a window of {} global batches", batches);
  const int64_t rows = std::accumulate(shares.begin(), shares.end(), int64_t{0});
  // The batches of one assignment, packed; their attention max/mean summed, and the fewest
  // tokens a batch holds.
  struct Formed {
    std::vector<WindowBatch> batches;
    double balance = 0;
    int64_t fewest = 0;
  };
  auto form = [&](const std::vector<int64_t>& batch_of) {
    Formed out{std::vector<WindowBatch>(static_cast<size_t>(batches)), 0, rows * seq_len};
    for (size_t i = 0; i < lengths.size(); ++i)
      out.batches[static_cast<size_t>(batch_of[i])].pieces.push_back(static_cast<int64_t>(i));
    for (WindowBatch& batch : out.batches) {
      std::vector<int64_t> mine;
      for (int64_t i : batch.pieces) mine.push_back(lengths[static_cast<size_t>(i)]);
      batch.packed = pack_balanced(mine, shares, seq_len, micro_batch);
      out.balance += max_over_mean(replica_loads(batch.packed, mine, shares, seq_len, PackingCost{}).attention);
      out.fewest = std::min(out.fewest, std::accumulate(mine.begin(), mine.end(), int64_t{0}));
    }
    return out;
  };
  Formed stream = form(stream_batches(lengths, batches, rows, seq_len));
  if (batches == 1) return std::move(stream.batches);
  const std::vector<int64_t> batch_of = spread(lengths, batches, shares, seq_len);
  if (batch_of.empty()) return std::move(stream.batches);
  Formed spread_out = form(batch_of);
  const bool better = spread_out.balance < stream.balance && spread_out.fewest >= stream.fewest;
  return std::move(better ? spread_out.batches : stream.batches);
}

}  // namespace hetu::dataset
