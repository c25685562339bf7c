// Tests for lib/io/document_packing: next-fit rows, every packing holds each piece exactly once
// within row capacity, replica loads against sums computed here, and the balance figure on a
// long-tailed length distribution (32-2,048 tokens, P(L > x) falling like 1/x): balanced
// packing brings the per-replica attention cost's max/mean to <= 1.05 where in-order packing
// leaves it >= 1.3, with equal and with uneven (replicas of different speed) shares.
#include "lib/io/document_packing.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>


using namespace hetu;
using namespace hetu::io;

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
