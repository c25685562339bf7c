// The lower bound on the attention max / mean of packings. See Note [Packing balance bound].
#include "lib/dataset/packing_bound.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <vector>

#include "lib/dataset/document_packing.h"
#include "lib/util/error.h"

namespace hetu::dataset {

// Note [Packing balance bound]
// Replica k holds s_k rows, C_k = s_k x seq_len tokens; its load per share row is x_k = A_k /
// s_k (A_k: its Σ L²), and the figure is max x / mean x, Q = Σ L² over all. Two steps.
// First a lower bound M on max x: the least M that two necessary conditions of a packing
// with max x <= M allow (both only loosen as M grows, so a bisection finds it):
//   - the loads hold everything: M Σ s_k >= Q;
//   - for every j, the j longest pieces fit somewhere: replica k holds at most c_k of them, the
//     most whose c_k shortest (the j-th longest and those just above it) have Σ L² <= M s_k and
//     Σ L <= C_k, and Σ c_k >= j (for equal shares, at j = n m + 1 one replica holds m + 1 of
//     them: the pigeonhole bound).
// With equal shares (n replicas of s rows, C = s x seq_len) M is raised further: for every k <
// n, with L_k the k-th longest piece, either two of the k longest share a replica (2 L_k²), or
// they sit on k replicas while the other n - k hold at most (n - k) C tokens, so those k take
// the rest of the tokens, at least as much attention as the shortest other pieces carry for
// them (fluid: t tokens of a piece of L cost t L); the largest of the k then has at least (Σ of
// the k longest L² + that) / k. The lesser of the two. A batch nearly full of tokens (next-fit)
// whose few longest documents each bring about a replica's mean is bound by this.
// Then the figure: with unequal shares the mean moves with the packing (attention on a replica
// of few rows counts more). Given max x = M', the mean is at most S(M') / n, S(M') the most Σ
// A_k / s_k can be with every A_k <= M' s_k and Σ A_k = Q: the loads poured into the replicas
// of fewest rows first, each up to M' s_k. S is concave with S(0) = 0 (read with Σ A_k <= Q),
// so M' / S(M') only grows with M', and every packing's max / mean is at least n M / S(M). For
// equal shares S = Q / s and that is M over the mean. (tests: the brute-force optimum is never
// below it, with equal and unequal shares.)
namespace {

// Equal shares: the least the largest replica's Σ L² can be (the last two terms above).
double equal_shares_largest_attention(const std::vector<int64_t>& longest, int64_t n, double capacity) {
  auto square = [](int64_t l) { return PackingCost::attention(l); };
  double all_tokens = 0;
  for (int64_t l : longest) all_tokens += static_cast<double>(l);
  double bound = 0;
  const auto count = static_cast<int64_t>(longest.size());
  double top_square = 0, top_tokens = 0;
  for (int64_t k = 1; k < n && k <= count; ++k) {
    const int64_t lk = longest[static_cast<size_t>(k - 1)];
    top_square += square(lk);
    top_tokens += static_cast<double>(lk);
    double forced = all_tokens - top_tokens - static_cast<double>(n - k) * capacity, fluid = 0;
    for (int64_t i = count - 1; i >= k && forced > 0; --i) {  // the shortest others first
      const auto l = static_cast<double>(longest[static_cast<size_t>(i)]);
      fluid += std::min(l, forced) * l;
      forced -= l;
    }
    const double apart = (top_square + fluid) / static_cast<double>(k);
    bound = std::max(bound, k == 1 ? apart : std::min(2 * square(lk), apart));
  }
  return bound;
}

// Whether a packing whose every load per share row is at most `m` passes the two necessary
// conditions of the Note. `square` and `tokens` are prefix sums over `longest` (descending).
bool loads_may_hold(double m, std::span<const int64_t> shares, int64_t seq_len, const std::vector<double>& square,
                    const std::vector<double>& tokens) {
  const size_t count = square.size() - 1;
  double room = 0;
  for (int64_t s : shares) room += m * static_cast<double>(s);
  if (room < square.back()) return false;
  for (size_t j = 1; j <= count; ++j) {
    size_t held = 0;
    for (int64_t s : shares) {
      const double budget = m * static_cast<double>(s), capacity = static_cast<double>(s * seq_len);
      size_t lo = 0, hi = j;  // the most c with pieces [j - c, j) within budget and capacity: c in [lo, hi]
      while (lo < hi) {
        const size_t c = (lo + hi + 1) / 2;
        const bool fits = square[j] - square[j - c] <= budget && tokens[j] - tokens[j - c] <= capacity;
        if (fits) {
          lo = c;
        } else {
          hi = c - 1;
        }
      }
      held += lo;
      if (held >= j) break;
    }
    if (held < j) return false;
  }
  return true;
}

// The least max / mean any packing whose largest load per share row is at least `m` can
// have: min over M' >= m of n M' / S(M') (the Note's last step), with each replica's Σ L²
// also held within what its rows can take: at least the fluid attention of the tokens the
// others have no room for (shortest pieces first), at most that of its own tokens (longest
// first). S is piecewise linear, so the least ratio is at an end of a piece: m, a bound's
// kink or where the pour moves on to the next replica.
double max_over_mean_bound(double m, std::span<const int64_t> shares, int64_t seq_len,
                           const std::vector<int64_t>& longest, double q) {
  const size_t n = shares.size();
  std::vector<size_t> order(n);  // fewest rows first
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return shares[a] < shares[b]; });
  double all_tokens = 0, all_room = 0;
  for (int64_t l : longest) all_tokens += static_cast<double>(l);
  for (int64_t s : shares) all_room += static_cast<double>(s * seq_len);
  auto fluid = [&](double tokens, bool longest_first) {  // t tokens of a piece of L cost t L
    double cost = 0;
    for (size_t i = 0; i < longest.size() && tokens > 0; ++i) {
      const auto l = static_cast<double>(longest[longest_first ? i : longest.size() - 1 - i]);
      cost += std::min(l, tokens) * l;
      tokens -= l;
    }
    return cost;
  };
  std::vector<double> share(n), lo(n), hi(n);  // in `order`
  for (size_t i = 0; i < n; ++i) {
    share[i] = static_cast<double>(shares[order[i]]);
    const double room = share[i] * static_cast<double>(seq_len);
    lo[i] = fluid(all_tokens - (all_room - room), false);
    hi[i] = std::min(q, fluid(room, true));
    m = std::max(m, lo[i] / share[i]);
  }
  double held_low = 0;
  for (double l : lo) held_low += l;
  const double extra = q - held_low;
  auto most_mean_sum = [&](double c) {  // S(c); -1 when no loads within the bounds hold Q
    double left = extra, sum = 0;
    for (size_t i = 0; i < n; ++i) {
      const double cap = std::min(c * share[i], hi[i]) - lo[i];
      if (cap < 0) return -1.0;
      const double a = std::min(left, cap);
      left -= a;
      sum += (lo[i] + a) / share[i];
    }
    return left > 1e-9 * q ? -1.0 : sum;
  };
  std::vector<double> candidates{m}, kinks;
  for (size_t i = 0; i < n; ++i) {
    kinks.push_back(hi[i] / share[i]);
    candidates.push_back(hi[i] / share[i]);
  }
  std::sort(kinks.begin(), kinks.end());
  // Where the first j replicas' room above their lows, Σ (min(c s, hi) - lo), reaches the extra:
  // linear in c between kinks.
  for (size_t v = 0; v <= kinks.size(); ++v) {
    const double from = v == 0 ? 0.0 : kinks[v - 1], to = v == kinks.size() ? std::numeric_limits<double>::infinity() : kinks[v];
    const double probe = v == kinks.size() ? from + 1 : (from + to) / 2;
    double a = 0, b = 0;
    for (size_t j = 0; j < n; ++j) {
      if (probe * share[j] < hi[j]) {
        b += share[j];
        a -= lo[j];
      } else {
        a += hi[j] - lo[j];
      }
      if (b > 0) {
        const double c = (extra - a) / b;
        if (c >= from && c <= to) candidates.push_back(c);
      }
    }
  }
  double best = std::numeric_limits<double>::infinity();
  for (double c : candidates) {
    if (c < m) continue;
    const double sum = most_mean_sum(c);
    if (sum > 0) best = std::min(best, static_cast<double>(n) * c / sum);
  }
  return std::isfinite(best) ? std::max(1.0, best) : 1.0;
}

}  // namespace

double attention_bound(std::span<const int64_t> lengths, std::span<const int64_t> shares, int64_t seq_len) {
  if (lengths.empty()) return 0;
  HT_CHECK(!shares.empty() && std::all_of(shares.begin(), shares.end(), [](int64_t s) { return s >= 1; }),
           "attention_bound: shares must be >= 1 rows each");
  const auto n = static_cast<int64_t>(shares.size());
  std::vector<int64_t> longest(lengths.begin(), lengths.end());
  std::sort(longest.begin(), longest.end(), std::greater<>());
  std::vector<double> square{0}, tokens{0};
  for (int64_t l : longest) {
    square.push_back(square.back() + PackingCost::attention(l));
    tokens.push_back(tokens.back() + static_cast<double>(l));
  }
  const double q = square.back();
  int64_t rows = 0, fewest = shares[0];
  for (int64_t s : shares) rows += s, fewest = std::min(fewest, s);
  // Bisect M between the mean per share row and everything on the replica of fewest rows
  // (every packing's max is below that, so every packing passes there).
  double lo = q / static_cast<double>(rows), hi = q / static_cast<double>(fewest);
  if (!loads_may_hold(lo, shares, seq_len, square, tokens)) {
    for (int i = 0; i < 60 && hi - lo > 1e-12 * hi; ++i) {
      const double mid = (lo + hi) / 2;
      (loads_may_hold(mid, shares, seq_len, square, tokens) ? hi : lo) = mid;
    }
  }  // lo: the mean, or an M that fails (no packing's max is below it)
  double m = lo;
  const bool equal = std::all_of(shares.begin(), shares.end(), [&](int64_t s) { return s == shares[0]; });
  if (equal) {
    m = std::max(m, equal_shares_largest_attention(longest, n, static_cast<double>(shares[0] * seq_len)) /
                        static_cast<double>(shares[0]));
  }
  return max_over_mean_bound(m, shares, seq_len, longest, square.back());
}

}  // namespace hetu::dataset
