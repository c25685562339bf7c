// Tests for lib/dataset/document_packing: next-fit rows, every packing holds each piece exactly once
// within row capacity, replica loads against sums computed here, and the balance figure on a
// long-tailed length distribution (32-2,048 tokens, P(L > x) falling like 1/x): balanced
// packing brings the per-replica attention cost's max/mean to <= 1.05 where in-order packing
// leaves it >= 1.3, with equal and with uneven (replicas of different speed) shares; the
// refinement's guarantee (no single row swap, piece move or piece swap lowers the largest
// load, every such change tried here) and the largest load against a brute-force optimum; and
// attention_bound (lib/dataset/packing_bound.h) against the brute-force least max/mean, with equal
// and unequal shares: never above it, and not trivially loose.
#include "lib/dataset/document_packing.h"
#include "lib/dataset/packing_bound.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>

using namespace hetu;
using namespace hetu::dataset;

namespace {

// Each piece once, and no row over seq_len.
void check_holds_each_once(const PackedBatch& b, size_t pieces, const std::vector<int64_t>& lengths, int64_t T) {
  std::vector<int> seen(pieces, 0);
  for (const std::vector<int64_t>& row : b.rows) {
    int64_t used = 0;
    for (int64_t i : row) {
      ++seen[static_cast<size_t>(i)];
      used += lengths[static_cast<size_t>(i)];
    }
    CHECK(used <= T);
  }
  CHECK(std::all_of(seen.begin(), seen.end(), [](int s) { return s == 1; }));
}

}  // namespace

TEST_CASE("next-fit fills rows in order and stops at the piece that fits no row", "[packing]") {
  NextFitRows fill(2, 10);
  CHECK(fill.add(6));
  CHECK(fill.add(4));   // row 0 full
  CHECK(fill.add(7));   // row 1
  CHECK_FALSE(fill.add(4));  // would need a third row
  CHECK(fill.add(3));   // still fits row 1
  CHECK(fill.row_of() == std::vector<int64_t>{0, 0, 1, 1});
  CHECK(fill.pieces() == 4);
}

TEST_CASE("in-order and balanced packings hold every piece once within row capacity", "[packing]") {
  const std::vector<int64_t> shares = {1, 2, 1};
  const int64_t T = 64;
  std::vector<int64_t> lengths;
  NextFitRows fill(4, T);
  for (int64_t l : long_tailed_lengths(200, 2, T, 5)) {
    if (!fill.add(l)) break;
    lengths.push_back(l);
  }
  const PackingCost cost{3.0};
  for (const PackedBatch& b : {pack_in_order(lengths, shares, T), pack_balanced(lengths, shares, T, {{0, 2, 0}})}) {
    REQUIRE(b.rows.size() == 4);
    check_holds_each_once(b, lengths.size(), lengths, T);
    // Loads against sums written out here: replica 1 owns rows 1 and 2 and divides by its share 2.
    const ReplicaLoads loads = replica_loads(b, lengths, shares, T, cost);
    double attention = 0, total = 2 * 3.0 * static_cast<double>(T) / 2;  // two rows of T slots
    for (size_t r : {size_t{1}, size_t{2}}) {
      for (int64_t i : b.rows[r]) {
        const auto l = static_cast<double>(lengths[static_cast<size_t>(i)]);
        attention += l * l / 2;
        total += l * l / 2;
      }
    }
    CHECK(loads.attention[1] == Approx(attention));
    CHECK(loads.total[1] == Approx(total));
  }
}

TEST_CASE("balanced packing evens the attention cost per replica share on long-tailed documents", "[packing]") {
  const std::vector<int64_t> lengths = long_tailed_lengths(6000, 32, 2048, 11);
  const PackingCost cost{12.0 * 64};  // a model of hidden 64: 12·hidden per token
  for (const std::vector<int64_t>& shares : {std::vector<int64_t>{4, 4, 4, 4}, std::vector<int64_t>{2, 4, 4, 6}}) {
    const BalanceReport r = packing_balance(lengths, shares, 2048, cost);
    INFO("shares " << shares[0] << ":" << shares[1] << ":" << shares[2] << ":" << shares[3] << ", " << r.batches
                   << " batches: attention max/mean in order " << r.in_order_attention << ", balanced "
                   << r.balanced_attention << "; whole cost " << r.in_order_total << ", " << r.balanced_total);
    CHECK(r.batches >= 10);
    CHECK(r.in_order_attention >= 1.3);
    CHECK(r.balanced_attention <= 1.05);
    CHECK(r.balanced_total <= 1.05);
  }
}

namespace {

// Per replica Σ L² / share, summed here from the rows.
std::vector<double> attention_per_share(const std::vector<std::vector<int64_t>>& rows, const std::vector<int64_t>& lengths,
                                        const std::vector<int64_t>& shares) {
  std::vector<double> out(shares.size(), 0.0);
  size_t r = 0;
  for (size_t k = 0; k < shares.size(); ++k) {
    for (int64_t n = 0; n < shares[k]; ++n, ++r) {
      for (int64_t i : rows[r]) out[k] += static_cast<double>(lengths[static_cast<size_t>(i)] * lengths[static_cast<size_t>(i)]);
    }
    out[k] /= static_cast<double>(shares[k]);
  }
  return out;
}

// Over every placement of the pieces into rows of T (brute force: rows^pieces placements):
// the least max over replicas of Σ L² / share, and the least max / mean of those.
struct Optimum {
  double max_attention = std::numeric_limits<double>::infinity();
  double max_over_mean = std::numeric_limits<double>::infinity();
};
Optimum brute_force_optimum(const std::vector<int64_t>& lengths, const std::vector<int64_t>& shares, int64_t T) {
  const size_t rows = static_cast<size_t>(std::accumulate(shares.begin(), shares.end(), int64_t{0}));
  std::vector<std::vector<int64_t>> placed(rows);
  std::vector<int64_t> room(rows, T);
  Optimum best;
  std::function<void(size_t)> place = [&](size_t i) {
    if (i == lengths.size()) {
      const std::vector<double> a = attention_per_share(placed, lengths, shares);
      const double largest = *std::max_element(a.begin(), a.end());
      const double mean = std::accumulate(a.begin(), a.end(), 0.0) / static_cast<double>(a.size());
      best.max_attention = std::min(best.max_attention, largest);
      best.max_over_mean = std::min(best.max_over_mean, largest / mean);
      return;
    }
    for (size_t r = 0; r < rows; ++r) {
      if (room[r] < lengths[i]) continue;
      room[r] -= lengths[i];
      placed[r].push_back(static_cast<int64_t>(i));
      place(i + 1);
      placed[r].pop_back();
      room[r] += lengths[i];
    }
  };
  place(0);
  return best;
}

// Up to `most` pieces of [lo, T] tokens that next-fit puts into `rows` rows of T, from `seed`.
std::vector<int64_t> filling_pieces(int64_t rows, int64_t lo, int64_t T, uint64_t seed, int64_t most) {
  std::vector<int64_t> out;
  NextFitRows fill(rows, T);
  for (int64_t l : long_tailed_lengths(most, lo, T, seed)) {
    if (static_cast<int64_t>(out.size()) == most || !fill.add(l)) break;
    out.push_back(l);
  }
  return out;
}

}  // namespace

TEST_CASE("balanced packing leaves no single row swap, move or swap of pieces that lowers the largest load",
          "[packing]") {
  // The refinement's guarantee, checked by trying every such change here: for the most loaded
  // replica (per share row), no change between it and another replica leaves both below its load.
  const int64_t T = 64;
  int refined = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    const std::vector<int64_t> shares = seed % 2 == 0 ? std::vector<int64_t>{2, 2, 2} : std::vector<int64_t>{1, 3, 2};
    const std::vector<int64_t> lengths = filling_pieces(6, 4, T, seed, 200);
    const PackedBatch b = pack_balanced(lengths, shares, T);
    check_holds_each_once(b, lengths.size(), lengths, T);
    const std::vector<double> load = attention_per_share(b.rows, lengths, shares);
    const auto a = static_cast<size_t>(std::max_element(load.begin(), load.end()) - load.begin());
    std::vector<int64_t> owner;
    for (size_t k = 0; k < shares.size(); ++k) owner.insert(owner.end(), static_cast<size_t>(shares[k]), static_cast<int64_t>(k));
    auto sq = [&](int64_t i) { return static_cast<double>(lengths[static_cast<size_t>(i)] * lengths[static_cast<size_t>(i)]); };
    auto room = [&](size_t r) {
      int64_t used = 0;
      for (int64_t i : b.rows[r]) used += lengths[static_cast<size_t>(i)];
      return T - used;
    };
    auto lowers = [&](size_t k, double delta) {  // delta of Σ L² from replica a to replica k
      return std::max(load[a] - delta / static_cast<double>(shares[a]), load[k] + delta / static_cast<double>(shares[k])) <
             load[a] * (1 - 1e-9);
    };
    for (size_t ra = 0; ra < b.rows.size(); ++ra) {
      if (static_cast<size_t>(owner[ra]) != a) continue;
      for (size_t rb = 0; rb < b.rows.size(); ++rb) {
        const auto k = static_cast<size_t>(owner[rb]);
        if (k == a) continue;
        double ca = 0, cb = 0;
        for (int64_t i : b.rows[ra]) ca += sq(i);
        for (int64_t j : b.rows[rb]) cb += sq(j);
        INFO("seed " << seed << ", rows " << ra << " and " << rb);
        CHECK_FALSE(lowers(k, ca - cb));
        for (int64_t i : b.rows[ra]) {
          if (room(rb) >= lengths[static_cast<size_t>(i)]) CHECK_FALSE(lowers(k, sq(i)));
          for (int64_t j : b.rows[rb]) {
            if (room(rb) + lengths[static_cast<size_t>(j)] >= lengths[static_cast<size_t>(i)] &&
                room(ra) + lengths[static_cast<size_t>(i)] >= lengths[static_cast<size_t>(j)]) {
              CHECK_FALSE(lowers(k, sq(i) - sq(j)));
            }
          }
        }
      }
    }
    ++refined;
  }
  CHECK(refined == 60);
}

TEST_CASE("balanced packing comes near the brute-force optimum of the largest attention load", "[packing]") {
  // Every placement of up to 8 pieces of 3-16 tokens into 4 rows of 16 (two replicas of two rows, or shares
  // 1:3): the packing's largest attention per share row against the least possible.
  const int64_t T = 16;
  double worst = 0, sum = 0;
  int cases = 0, optimal = 0;
  for (uint64_t seed = 1; seed <= 80; ++seed) {
    const std::vector<int64_t> shares = seed % 2 == 0 ? std::vector<int64_t>{2, 2} : std::vector<int64_t>{1, 3};
    const std::vector<int64_t> lengths = filling_pieces(4, 3, T, 100 + seed, 8);
    const std::vector<double> load = attention_per_share(pack_balanced(lengths, shares, T).rows, lengths, shares);
    const double ratio = *std::max_element(load.begin(), load.end()) / brute_force_optimum(lengths, shares, T).max_attention;
    CHECK(ratio >= 1 - 1e-12);
    worst = std::max(worst, ratio);
    sum += ratio;
    optimal += ratio <= 1 + 1e-12 ? 1 : 0;
    ++cases;
  }
  INFO(cases << " cases: " << optimal << " optimal, mean ratio " << sum / cases << ", worst " << worst);
  // Measured: 59 of 80 optimal, mean 1.0054, worst 1.07 (the greedy alone: 48, 1.0094, 1.129).
  CHECK(optimal >= 55);
  CHECK(sum / cases <= 1.007);
  CHECK(worst <= 1.08);
}

TEST_CASE("the attention balance bound is never above the brute-force optimum, for equal and unequal shares",
          "[packing]") {
  // Every placement of up to 8 pieces of 3-16 tokens into 4 rows of 16, over replicas of 2:2,
  // 1:3 and 1:2:1 rows: the least attention max / mean per share row any packing reaches.
  const int64_t T = 16;
  const std::vector<std::vector<int64_t>> layouts = {{2, 2}, {1, 3}, {1, 2, 1}};
  int tight[3] = {0, 0, 0}, above_one[3] = {0, 0, 0};
  double gap[3] = {0, 0, 0};
  const int per_layout = 40;
  for (size_t k = 0; k < layouts.size(); ++k) {
    for (uint64_t seed = 1; seed <= per_layout; ++seed) {
      const std::vector<int64_t>& shares = layouts[k];
      const std::vector<int64_t> lengths = filling_pieces(4, 3, T, 300 + 7 * seed + k, 8);
      const double optimum = brute_force_optimum(lengths, shares, T).max_over_mean;
      const double bound = attention_bound(lengths, shares, T);
      INFO("shares " << shares.size() << " seed " << seed << ": bound " << bound << ", optimum " << optimum);
      CHECK(bound >= 1 - 1e-12);
      CHECK(bound <= optimum + 1e-12);
      tight[k] += bound >= optimum - 1e-9 ? 1 : 0;
      above_one[k] += bound > 1 + 1e-9 ? 1 : 0;
      gap[k] += optimum - bound;
    }
    INFO("shares " << k << ": tight " << tight[k] << ", above 1 " << above_one[k] << ", mean gap " << gap[k] / per_layout);
    // Not trivially loose: it says more than 1 where the optimum is well above it and meets the
    // optimum in some cases. Measured (tight, above 1, mean optimum - bound): 2:2 12, 10, 0.010;
    // 1:3 1, 3, 0.031 (most of its optima are within 1.03: little to bound); 1:2:1 1, 16, 0.053.
    const int least_tight[3] = {10, 1, 1}, least_above_one[3] = {8, 3, 14};
    const double most_gap[3] = {0.015, 0.04, 0.065};
    CHECK(tight[k] >= least_tight[k]);
    CHECK(above_one[k] >= least_above_one[k]);
    CHECK(gap[k] / per_layout <= most_gap[k]);
  }
  CHECK(attention_bound({}, std::vector<int64_t>{1, 3}, T) == 0);
  // Five documents of 2,048 over four replicas of two rows: two share one (2 x 2,048² over its
  // two rows), against the mean per share row, (5 x 2,048² + 64²) / 8: the packing_bound.h example.
  const std::vector<int64_t> five = {2048, 2048, 2048, 2048, 2048, 64};
  CHECK(attention_bound(five, std::vector<int64_t>{2, 2, 2, 2}, 2048) ==
        Approx(8.0 * 2048 * 2048 / (5.0 * 2048 * 2048 + 64 * 64)).epsilon(1e-9));
}
