// Document packing: next-fit rows, the naive in-order packing and the cost-balanced one.
#include "lib/dataset/document_packing.h"

#include <algorithm>
#include <numeric>

#include "lib/core/rng.h"
#include "lib/dataset/packing_bound.h"
#include "lib/dataset/window_packing.h"
#include "lib/util/error.h"

namespace hetu::dataset {
namespace {

// Row r's owner, for rows laid out replica by replica.
std::vector<int64_t> owners(std::span<const int64_t> shares) {
  std::vector<int64_t> owner;
  for (size_t k = 0; k < shares.size(); ++k) {
    HT_CHECK(shares[k] >= 1, "packing: replica {} has a share of {} rows", k, shares[k]);
    owner.insert(owner.end(), static_cast<size_t>(shares[k]), static_cast<int64_t>(k));
  }
  return owner;
}

void check_lengths(std::span<const int64_t> lengths, int64_t seq_len) {
  for (size_t i = 0; i < lengths.size(); ++i) {
    HT_CHECK(lengths[i] >= 1 && lengths[i] <= seq_len, "packing: piece {} has {} tokens, outside [1, {}]", i,
             lengths[i], seq_len);
  }
}

// First-fit decreasing over all rows; empty when some piece finds no room.
std::vector<std::vector<int64_t>> first_fit_decreasing(std::span<const int64_t> lengths, const std::vector<int64_t>& order,
                                                       int64_t rows, int64_t seq_len) {
  std::vector<std::vector<int64_t>> out(static_cast<size_t>(rows));
  std::vector<int64_t> room(static_cast<size_t>(rows), seq_len);
  for (int64_t i : order) {
    const auto it = std::find_if(room.begin(), room.end(), [&](int64_t r) { return r >= lengths[static_cast<size_t>(i)]; });
    if (it == room.end()) return {};
    *it -= lengths[static_cast<size_t>(i)];
    out[static_cast<size_t>(it - room.begin())].push_back(i);
  }
  return out;
}

// Reorders one replica's rows so that its micro-batches (micro_batch rows each) cost alike:
// the costliest row first into the cheapest micro-batch with room (LPT).
void order_micro_batches(std::vector<std::vector<int64_t>>& rows, int64_t micro_batch, std::span<const int64_t> lengths) {
  const auto n = static_cast<int64_t>(rows.size());
  if (micro_batch <= 0 || micro_batch >= n || n % micro_batch != 0) return;
  std::vector<double> row_cost(rows.size(), 0.0);
  for (size_t r = 0; r < rows.size(); ++r)
    for (int64_t i : rows[r]) row_cost[r] += PackingCost::attention(lengths[static_cast<size_t>(i)]);
  std::vector<size_t> by_cost(rows.size());
  std::iota(by_cost.begin(), by_cost.end(), size_t{0});
  std::stable_sort(by_cost.begin(), by_cost.end(), [&](size_t a, size_t b) { return row_cost[a] > row_cost[b]; });
  const int64_t groups = n / micro_batch;
  std::vector<double> group_cost(static_cast<size_t>(groups), 0.0);
  std::vector<std::vector<size_t>> group_rows(static_cast<size_t>(groups));
  for (size_t r : by_cost) {
    size_t best = 0;
    bool found = false;
    for (size_t g = 0; g < group_rows.size(); ++g) {
      if (static_cast<int64_t>(group_rows[g].size()) == micro_batch) continue;
      if (!found || group_cost[g] < group_cost[best]) best = g;
      found = true;
    }
    group_rows[best].push_back(r);
    group_cost[best] += row_cost[r];
  }
  std::vector<std::vector<int64_t>> ordered;
  for (const std::vector<size_t>& g : group_rows)
    for (size_t r : g) ordered.push_back(std::move(rows[r]));
  rows = std::move(ordered);
}

// Candidate moves the refinement may weigh per global batch: a bound on its time that is
// deterministic, unlike a clock (measured: 2,048 rows of 16 tokens spend it in about 10 ms;
// 16 rows of 2,048 from scripts/bench/varlen.sh need under 100,000).
constexpr int64_t kRefinementBudget = 1 << 18;

// The refinement pass of Note [Balanced packing]: moves that lower the most loaded replica's
// attention per share row, until none does (or the work budget is spent).
class Refinement {
 public:
  Refinement(std::vector<std::vector<int64_t>>& rows, const std::vector<int64_t>& owner, std::span<const int64_t> shares,
             std::span<const int64_t> lengths, int64_t seq_len)
      : rows_(rows), owner_(owner), shares_(shares), lengths_(lengths), seq_len_(seq_len), room_(rows.size(), seq_len),
        cost_(rows.size(), 0.0), load_(shares.size(), 0.0) {
    for (size_t r = 0; r < rows.size(); ++r) {
      for (int64_t i : rows[r]) {
        room_[r] -= length(i);
        cost_[r] += PackingCost::attention(length(i));
      }
      load_[static_cast<size_t>(owner[r])] += cost_[r];
    }
  }

  void run() {
    while (budget_ > 0 && improve_once()) {
    }
  }

 private:
  // A change of replica a's and b's rows: a row swap (i, j < 0), a piece moved (j < 0) or two swapped.
  struct Move {
    size_t ra = 0, rb = 0;
    int64_t i = -1, j = -1;  // positions in rows_[ra], rows_[rb]
    bool whole_rows = false;
    double worse = 0;        // the larger of the two replicas' loads per share after it
  };

  int64_t length(int64_t piece) const { return lengths_[static_cast<size_t>(piece)]; }
  double per_share(size_t k, double load) const { return load / static_cast<double>(shares_[k]); }

  // Considers shifting `delta` of attention from row ra's replica to row rb's.
  void consider(Move candidate, double delta, size_t a, size_t b, Move& best, bool& found) {
    --budget_;
    candidate.worse = std::max(per_share(a, load_[a] - delta), per_share(b, load_[b] + delta));
    if (candidate.worse < limit_ && (!found || candidate.worse < best.worse)) {
      best = candidate;
      found = true;
    }
  }

  bool improve_once() {
    size_t a = 0;
    for (size_t k = 1; k < load_.size(); ++k)
      if (per_share(k, load_[k]) > per_share(a, load_[a])) a = k;
    limit_ = per_share(a, load_[a]) * (1 - 1e-12);  // strictly better, past rounding
    Move best;
    bool found = false;
    for (size_t ra = 0; ra < rows_.size() && budget_ > 0; ++ra) {
      if (static_cast<size_t>(owner_[ra]) != a) continue;
      for (size_t rb = 0; rb < rows_.size(); ++rb) {
        const auto b = static_cast<size_t>(owner_[rb]);
        if (b == a) continue;
        consider({ra, rb, -1, -1, true}, cost_[ra] - cost_[rb], a, b, best, found);
        for (size_t i = 0; i < rows_[ra].size(); ++i) {
          const int64_t li = length(rows_[ra][i]);
          if (room_[rb] >= li) consider({ra, rb, static_cast<int64_t>(i), -1}, PackingCost::attention(li), a, b, best, found);
          for (size_t j = 0; j < rows_[rb].size(); ++j) {
            const int64_t lj = length(rows_[rb][j]);
            if (lj >= li || room_[rb] + lj < li) continue;
            consider({ra, rb, static_cast<int64_t>(i), static_cast<int64_t>(j)},
                     PackingCost::attention(li) - PackingCost::attention(lj), a, b, best, found);
          }
        }
      }
    }
    if (found) apply(best);
    return found;
  }

  void apply(const Move& m) {
    std::vector<int64_t>& from = rows_[m.ra];
    std::vector<int64_t>& to = rows_[m.rb];
    if (m.whole_rows) {
      std::swap(from, to);
    } else {
      const int64_t piece = from[static_cast<size_t>(m.i)];
      from.erase(from.begin() + m.i);
      if (m.j >= 0) {
        from.push_back(to[static_cast<size_t>(m.j)]);
        to.erase(to.begin() + m.j);
      }
      to.push_back(piece);
    }
    for (size_t r : {m.ra, m.rb}) {
      load_[static_cast<size_t>(owner_[r])] -= cost_[r];
      room_[r] = seq_len_;
      cost_[r] = 0;
      for (int64_t i : rows_[r]) {
        room_[r] -= length(i);
        cost_[r] += PackingCost::attention(length(i));
      }
      load_[static_cast<size_t>(owner_[r])] += cost_[r];
    }
  }

  std::vector<std::vector<int64_t>>& rows_;
  const std::vector<int64_t>& owner_;
  std::span<const int64_t> shares_, lengths_;
  int64_t seq_len_;
  std::vector<int64_t> room_;
  std::vector<double> cost_, load_;  // per row; per replica
  double limit_ = 0;
  int64_t budget_ = kRefinementBudget;
};

}  // namespace

NextFitRows::NextFitRows(int64_t rows, int64_t seq_len) : rows_(rows), seq_len_(seq_len) {
  HT_CHECK(rows >= 1 && seq_len >= 1, "packing: {} rows of {} tokens", rows, seq_len);
}

bool NextFitRows::add(int64_t length) {
  HT_CHECK(length >= 1 && length <= seq_len_, "packing: a piece of {} tokens does not fit rows of {}", length, seq_len_);
  if (used_ + length > seq_len_) {
    if (row_ + 1 == rows_) return false;
    ++row_;
    used_ = 0;
  }
  used_ += length;
  ++pieces_;
  row_of_.push_back(row_);
  return true;
}

PackedBatch pack_in_order(std::span<const int64_t> lengths, std::span<const int64_t> shares, int64_t seq_len) {
  check_lengths(lengths, seq_len);
  const auto rows = static_cast<int64_t>(owners(shares).size());
  NextFitRows fill(rows, seq_len);
  PackedBatch out;
  out.rows.resize(static_cast<size_t>(rows));
  for (size_t i = 0; i < lengths.size(); ++i) {
    HT_CHECK(fill.add(lengths[i]), "packing: {} pieces do not fit {} rows of {} in order", lengths.size(), rows, seq_len);
    out.rows[static_cast<size_t>(fill.row_of().back())].push_back(static_cast<int64_t>(i));
  }
  return out;
}

// Note [Balanced packing]
// A rank's step time is its linear work (every token slot of its rows through the
// projections and the MLP: padding is computed too, so this is the same per row and even
// per share by construction) plus its attention, which grows with the square of each
// document's length. Rows of equal token count can differ 64-fold in attention (one
// 2,048-token document against 64 of 32), so in-order packing leaves some replicas waiting
// on others. We place the pieces longest first, each into the replica whose attention per
// share row, (Σ L² + this piece's) / share,
// would be the least among those with a row that has room (best fit within that replica:
// the fullest row that takes it), so long documents spread over replicas in proportion to
// their shares and short ones fill the gaps. Should the greedy strand a piece (no row has
// room), first-fit decreasing places them all, and failing that the in-order rows, which
// always fit, go to replicas in order. The greedy must also fill every replica's rows (next-fit
// leaves a batch nearly full), so once the rows of the least loaded replicas are full the
// last pieces go wherever there is room, whatever the load: on long-tailed documents of up to
// 2,048 tokens in rows of 2,048 that left the attention max/mean at 1.09. A refinement pass
// (Refinement) then takes the most loaded replica (per share row; the first of equals) and
// applies the best of the changes between it and another replica that leave both below its
// load: swapping one of its rows with the other's (rows are all seq_len long, so this always
// fits), moving one of its pieces into a row of the other's with room, or swapping one of its
// pieces with a shorter one of such a row that then has room; until none is left (each change
// lowers the loads sorted largest first, so it ends) or a budget of candidates is spent. Every
// row costs the same linear part, so the whole cost per share row falls with the attention's
// maximum and never grows. Within a replica the rows are then ordered so that
// its micro-batches cost alike (the pipeline's stages wait least on each other). Every
// loader computes the same packing from the same lengths: nothing is communicated.
PackedBatch pack_balanced(std::span<const int64_t> lengths, std::span<const int64_t> shares, int64_t seq_len,
                          std::span<const int64_t> micro_batch) {
  check_lengths(lengths, seq_len);
  const std::vector<int64_t> owner = owners(shares);
  const auto rows = static_cast<int64_t>(owner.size());
  std::vector<int64_t> order(lengths.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return lengths[static_cast<size_t>(a)] > lengths[static_cast<size_t>(b)];
  });

  PackedBatch out;
  out.rows.resize(static_cast<size_t>(rows));
  std::vector<int64_t> room(static_cast<size_t>(rows), seq_len);
  std::vector<double> load(shares.size(), 0.0);
  bool stranded = false;
  for (int64_t i : order) {
    const int64_t length = lengths[static_cast<size_t>(i)];
    const double c = PackingCost::attention(length);
    int64_t best_row = -1;
    double best_score = 0;
    for (int64_t r = 0; r < rows; ++r) {
      if (room[static_cast<size_t>(r)] < length) continue;
      const auto k = static_cast<size_t>(owner[static_cast<size_t>(r)]);
      const double score = (load[k] + c) / static_cast<double>(shares[k]);
      const bool better = best_row < 0 || score < best_score ||
                          (score == best_score && room[static_cast<size_t>(r)] < room[static_cast<size_t>(best_row)]);
      if (better) {
        best_row = r;
        best_score = score;
      }
    }
    if (best_row < 0) {
      stranded = true;
      break;
    }
    room[static_cast<size_t>(best_row)] -= length;
    load[static_cast<size_t>(owner[static_cast<size_t>(best_row)])] += c;
    out.rows[static_cast<size_t>(best_row)].push_back(i);
  }
  if (stranded) {
    out.rows = first_fit_decreasing(lengths, order, rows, seq_len);
    if (out.rows.empty()) out = pack_in_order(lengths, shares, seq_len);
  }
  Refinement(out.rows, owner, shares, lengths, seq_len).run();
  for (std::vector<int64_t>& row : out.rows) std::sort(row.begin(), row.end());  // stream order within a row
  int64_t first = 0;
  for (size_t k = 0; k < shares.size(); ++k) {
    std::vector<std::vector<int64_t>> mine(out.rows.begin() + first, out.rows.begin() + first + shares[k]);
    order_micro_batches(mine, k < micro_batch.size() ? micro_batch[k] : 0, lengths);
    std::move(mine.begin(), mine.end(), out.rows.begin() + first);
    first += shares[k];
  }
  return out;
}

ReplicaLoads replica_loads(const PackedBatch& batch, std::span<const int64_t> lengths, std::span<const int64_t> shares,
                           int64_t seq_len, const PackingCost& cost) {
  const std::vector<int64_t> owner = owners(shares);
  HT_CHECK(owner.size() == batch.rows.size(), "packing: {} rows for shares of {} rows", batch.rows.size(), owner.size());
  ReplicaLoads out{std::vector<double>(shares.size(), 0.0), std::vector<double>(shares.size(), 0.0)};
  for (size_t r = 0; r < batch.rows.size(); ++r) {
    const auto k = static_cast<size_t>(owner[r]);
    const auto share = static_cast<double>(shares[k]);
    out.total[k] += cost.linear_per_token * static_cast<double>(seq_len) / share;
    for (int64_t i : batch.rows[r]) {
      const double attention = PackingCost::attention(lengths[static_cast<size_t>(i)]) / share;
      out.attention[k] += attention;
      out.total[k] += attention;
    }
  }
  return out;
}

BalanceReport packing_balance(std::span<const int64_t> document_lengths, std::span<const int64_t> shares,
                              int64_t seq_len, const PackingCost& cost, int64_t window) {
  std::vector<int64_t> pieces;
  for (int64_t length : document_lengths) {
    for (int64_t at = 0; at < length; at += seq_len) pieces.push_back(std::min(seq_len, length - at));
  }
  const auto rows = static_cast<int64_t>(owners(shares).size());
  const double capacity = static_cast<double>(rows * seq_len);
  auto fill = [&](std::span<const int64_t> batch) {
    return static_cast<double>(std::accumulate(batch.begin(), batch.end(), int64_t{0})) / capacity;
  };
  BalanceReport out;
  for (size_t first = 0; first < pieces.size();) {
    std::vector<size_t> ends;  // the window's next-fit batches end there
    for (size_t end = first; static_cast<int64_t>(ends.size()) < window;) {
      NextFitRows next_fit(rows, seq_len);
      while (end < pieces.size() && next_fit.add(pieces[end])) ++end;
      if (end == pieces.size()) break;  // the last, partial batch
      ends.push_back(end);
    }
    if (ends.empty()) break;
    const std::span<const int64_t> all(pieces.data() + first, ends.back() - first);
    const std::vector<WindowBatch> formed = pack_window(all, static_cast<int64_t>(ends.size()), shares, seq_len);
    for (size_t b = 0; b < ends.size(); ++b) {
      const size_t begin = b == 0 ? first : ends[b - 1];
      const std::span<const int64_t> batch(pieces.data() + begin, ends[b] - begin);
      std::vector<int64_t> lengths;
      for (int64_t i : formed[b].pieces) lengths.push_back(all[static_cast<size_t>(i)]);
      const ReplicaLoads in_order = replica_loads(pack_in_order(batch, shares, seq_len), batch, shares, seq_len, cost);
      const ReplicaLoads balanced = replica_loads(formed[b].packed, lengths, shares, seq_len, cost);
      out.in_order_attention += max_over_mean(in_order.attention);
      out.balanced_attention += max_over_mean(balanced.attention);
      out.in_order_total += max_over_mean(in_order.total);
      out.balanced_total += max_over_mean(balanced.total);
      out.attention_bound += attention_bound(batch, shares, seq_len);
      out.in_order_fill = std::min(out.in_order_fill, fill(batch));
      out.balanced_fill = std::min(out.balanced_fill, fill(lengths));
      ++out.batches;
    }
    first = ends.back();
  }
  if (out.batches > 0) {
    const auto n = static_cast<double>(out.batches);
    out.in_order_attention /= n;
    out.balanced_attention /= n;
    out.in_order_total /= n;
    out.balanced_total /= n;
    out.attention_bound /= n;
  }
  return out;
}

std::vector<int64_t> long_tailed_lengths(int64_t n, int64_t lo, int64_t hi, uint64_t seed) {
  HT_CHECK(n >= 0 && lo >= 1 && hi >= lo, "long_tailed_lengths: {} lengths in [{}, {}]", n, lo, hi);
  const CounterRng rng(seed, "data.lengths.long_tailed");
  std::vector<int64_t> out;
  const double a = 1.0 / static_cast<double>(lo), b = 1.0 / static_cast<double>(hi);
  for (int64_t i = 0; i < n; ++i) {
    const double u = static_cast<double>(rng.bits(i)[0]) / 4294967296.0;  // [0, 1)
    out.push_back(std::clamp(static_cast<int64_t>(1.0 / (a - u * (a - b))), lo, hi));
  }
  return out;
}

double max_over_mean(std::span<const double> values) {
  HT_CHECK(!values.empty(), "max_over_mean: no values");
  const double sum = std::accumulate(values.begin(), values.end(), 0.0);
  HT_CHECK(sum > 0, "max_over_mean: the values sum to {}", sum);
  return *std::max_element(values.begin(), values.end()) / (sum / static_cast<double>(values.size()));
}

}  // namespace hetu::dataset
