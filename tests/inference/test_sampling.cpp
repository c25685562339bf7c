// Next-token sampling (lib/inference/sampling.h) against the distribution it claims: many draws at
// uniform u are counted and compared with softmax(logits / T) written out here (Pearson's
// chi-square under a bound far above its 99.9% quantile), top-k never returns an id outside
// the k largest logits, and temperature 0 is the argmax.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "lib/inference/sampling.h"

using hetu::inference::sample_token;

namespace {

const std::vector<float> kLogits = {0.3f, 2.0f, -1.0f, 1.2f, 0.0f, 1.9f, -0.5f, 0.8f};

// The softmax of logits / temperature over the ids in `allowed` (0 elsewhere).
std::vector<double> expected_probabilities(double temperature, const std::vector<bool>& allowed) {
  std::vector<double> p(kLogits.size(), 0.0);
  double total = 0;
  for (size_t i = 0; i < kLogits.size(); ++i) {
    if (allowed[i]) total += p[i] = std::exp(kLogits[i] / temperature);
  }
  for (double& x : p) x /= total;
  return p;
}

// Counts of each id over n draws with u from a fixed-seed Mersenne twister.
std::vector<int64_t> draw(double temperature, int64_t top_k, int64_t n) {
  std::mt19937_64 gen(12345);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<int64_t> counts(kLogits.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t id = sample_token(kLogits.data(), static_cast<int64_t>(kLogits.size()), temperature, top_k, uniform(gen));
    REQUIRE((id >= 0 && id < static_cast<int32_t>(kLogits.size())));
    ++counts[static_cast<size_t>(id)];
  }
  return counts;
}

// Pearson's statistic over the ids with expected probability > 0; ids with probability 0
// must never be drawn.
double chi_square(const std::vector<int64_t>& counts, const std::vector<double>& p, int64_t n) {
  double stat = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0) {
      INFO("id " << i << " lies outside the sampled set");
      CHECK(counts[i] == 0);
      continue;
    }
    const double e = p[i] * static_cast<double>(n);
    stat += (static_cast<double>(counts[i]) - e) * (static_cast<double>(counts[i]) - e) / e;
  }
  return stat;
}

}  // namespace

TEST_CASE("sampling draws from the softmax of logits over temperature", "[sampling]") {
  const int64_t n = 200000;
  for (double temperature : {1.0, 0.5, 2.0}) {
    const std::vector<double> p = expected_probabilities(temperature, std::vector<bool>(kLogits.size(), true));
    const double stat = chi_square(draw(temperature, 0, n), p, n);
    INFO("temperature " << temperature << ": chi-square " << stat << " over 7 degrees of freedom");
    CHECK(stat < 40.0);  // the 99.9% quantile of chi-square(7) is 24.3
  }
}

TEST_CASE("sampling with top-k draws only the k most likely ids, renormalised", "[sampling]") {
  const int64_t n = 200000;
  // Largest logits: id 1 (2.0), id 5 (1.9), id 3 (1.2), id 7 (0.8).
  const std::vector<size_t> ranked = {1, 5, 3, 7};
  for (int64_t k : {1, 2, 3}) {
    std::vector<bool> allowed(kLogits.size(), false);
    for (int64_t i = 0; i < k; ++i) allowed[ranked[static_cast<size_t>(i)]] = true;
    const std::vector<double> p = expected_probabilities(0.8, allowed);
    const double stat = chi_square(draw(0.8, k, n), p, n);
    INFO("top-k " << k << ": chi-square " << stat);
    CHECK(stat < 40.0);
  }
  // A u just below 1 still lands inside the top k.
  CHECK(sample_token(kLogits.data(), 8, 1.0, 2, std::nextafter(1.0, 0.0)) == 5);
  // top_k >= vocab is the whole vocabulary: the top of the CDF is the least likely id.
  CHECK(sample_token(kLogits.data(), 8, 1.0, 100, std::nextafter(1.0, 0.0)) == 2);
}

TEST_CASE("sampling at temperature 0 is the argmax", "[sampling]") {
  for (double u : {0.0, 0.5, 0.999}) CHECK(sample_token(kLogits.data(), 8, 0.0, 0, u) == 1);
  CHECK(sample_token(kLogits.data(), 8, 0.0, 3, 0.7) == 1);
}
