// Next-token sampling: a partial sort for the top k, softmax weights relative to the largest
// logit (no overflow), and the inverse CDF at u.
#include "lib/inference/sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace hetu::inference {

int32_t sample_token(const float* logits, int64_t vocab, double temperature, int64_t top_k, double u) {
  if (temperature <= 0) return static_cast<int32_t>(std::max_element(logits, logits + vocab) - logits);
  std::vector<int32_t> order(static_cast<size_t>(vocab));
  std::iota(order.begin(), order.end(), 0);
  const int64_t k = top_k > 0 ? std::min(top_k, vocab) : vocab;
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  const double top = logits[order[0]];
  std::vector<double> p(static_cast<size_t>(k));
  double total = 0;
  for (int64_t i = 0; i < k; ++i) total += p[static_cast<size_t>(i)] = std::exp((logits[order[static_cast<size_t>(i)]] - top) / temperature);
  double acc = 0;
  for (int64_t i = 0; i < k; ++i) {
    acc += p[static_cast<size_t>(i)] / total;
    if (u < acc) return order[static_cast<size_t>(i)];
  }
  return order[static_cast<size_t>(k - 1)];
}

}  // namespace hetu::inference
