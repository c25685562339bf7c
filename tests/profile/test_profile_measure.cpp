// The profile's estimator (lib/profile/profile_measure.h, Note [Profile windows]): each piece is its
// mean over the middle third of the windows ranked by whole pass, so one window slowed by a
// burst of machine noise does not move it (the mean of all windows would), and the pieces
// add up to the middle windows' mean pass (each piece's own median would not: it drops the
// time slices a training step pays); the spread is the windows' median absolute deviation
// over their median; an emulated device's piece is its slowdown x its wall time, the
// sleep that emulates the slowdown outside the timing; every pass adds to held gradients, as a
// training step's later micro-batches do; rounds of windows gather into one estimate; and the
// inputs cover every tp shard of the vocabulary.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

#include "lib/ops/ops.h"
#include "lib/profile/profile_measure.h"
#include "lib/util/error.h"

using namespace hetu;
using namespace hetu::profile;

namespace {

constexpr double PieceTimes::*kTimes[] = {&PieceTimes::embed_forward_s, &PieceTimes::embed_backward_s,
                                          &PieceTimes::layer_forward_s, &PieceTimes::layer_backward_s,
                                          &PieceTimes::head_forward_s,  &PieceTimes::head_backward_s,
                                          &PieceTimes::layer_activation_bytes};

// One thread for the test, as the emulated benchmarks run (no pool to wake after a sleep).
struct OneThread {
  int before = ops::num_threads();
  OneThread() { ops::set_num_threads(1); }
  ~OneThread() { ops::set_num_threads(before); }
};

// A window of quiet times: every piece 1 ms x (1 + jitter), activations 1 MB.
PieceTimes quiet_window(double jitter) {
  PieceTimes t;
  for (double PieceTimes::*field : kTimes) t.*field = 1e-3 * (1 + jitter);
  t.layer_activation_bytes = 1e6;
  return t;
}

}  // namespace

TEST_CASE("profile windows: the middle windows, the median and the spread, by hand", "[profile_measure]") {
  // 7 windows: a third (2) dropped at each end; ties keep window order.
  CHECK(middle_windows({5, 1, 7, 3, 100, 2, 4}) == std::vector<size_t>{3, 6, 0});
  CHECK(middle_windows({2, 2, 2}) == std::vector<size_t>{1});
  CHECK(middle_windows({9, 4}) == std::vector<size_t>{1, 0});  // fewer than 3: all kept
  CHECK(window_trimmed_mean({5, 1, 7, 3, 100, 2, 4}) == Approx(4));
  CHECK_THROWS_AS(middle_windows({}), Error);
  CHECK(window_median({3, 1, 2}) == 2);
  CHECK(window_median({4, 1, 3, 2}) == 2.5);  // an even count: the middle two's mean
  CHECK_THROWS_AS(window_median({}), Error);
  // {1, 2, 3, 4, 100}: median 3, deviations {2, 1, 0, 1, 97}, their median 1.
  CHECK(window_spread({1, 2, 3, 4, 100}) == Approx(1.0 / 3));
  CHECK(window_spread({2, 2, 2}) == 0);
  CHECK(window_spread({0, 0, 0}) == 0);
}

TEST_CASE("profile windows: one window slowed 10x by a burst moves no piece's estimate", "[profile_measure]") {
  // Seven windows within 1% of each other; the fifth ran during a burst, every piece 10x.
  const std::vector<double> jitter = {0.004, -0.008, 0.01, 0.0, 9.0, -0.002, 0.006};
  std::vector<PieceTimes> windows;
  for (double j : jitter) windows.push_back(quiet_window(j));
  const int64_t layers = 4;
  const PieceTimes e = estimate_windows(windows, layers);
  // Ranked by jitter: -0.008 -0.002 | 0 0.004 0.006 | 0.01 9: the middle three's mean 0.01 / 3
  // (the mean of all seven would be 1 ms x (1 + 9.01 / 7) = 2.3 ms).
  for (double PieceTimes::*field : kTimes) {
    if (field == &PieceTimes::layer_activation_bytes) continue;
    CHECK(e.*field == Approx(1e-3 * (1 + 0.01 / 3)));
  }
  CHECK(e.layer_activation_bytes == 1e6);
  // The spread of the whole passes, each 12 ms x (1 + jitter) (4 layers): the median jitter is
  // 0.004; the deviations from it, sorted, 0 .002 .004 .006 .006 .012 8.996: their median .006.
  CHECK(e.spread == Approx(0.006 / 1.004));
}

TEST_CASE("profile windows: the pieces add up to the middle windows' mean pass", "[profile_measure]") {
  // Steady contention: in each window a different piece lost a 4 ms time slice, the others ran
  // untouched (1 ms each). Every piece's own median is 1 ms, but every pass paid 4 ms more.
  const int64_t layers = 2;
  std::vector<PieceTimes> windows;
  for (size_t w = 0; w < 7; ++w) {
    PieceTimes t = quiet_window(0.001 * static_cast<double>(w));  // the windows' order: by w
    double PieceTimes::*hit = kTimes[w % 6];
    t.*hit += hit == &PieceTimes::layer_forward_s || hit == &PieceTimes::layer_backward_s ? 4e-3 / layers : 4e-3;
    windows.push_back(t);
  }
  const PieceTimes e = estimate_windows(windows, layers);
  const double pass = e.embed_forward_s + e.embed_backward_s + layers * (e.layer_forward_s + e.layer_backward_s) +
                      e.head_forward_s + e.head_backward_s;
  // Each pass: 8 pieces of 1 ms x (1 + w / 1000) + 4 ms; the middle windows are w = 2, 3, 4.
  CHECK(pass == Approx(8e-3 * (1 + 0.003) + 4e-3));
}

TEST_CASE("profile windows: an emulated piece is slowdown x its wall time, the sleep outside it", "[profile_measure]") {
  const OneThread one_thread;
  ModelConfig config = *find_flavor(Arch::gpt2, "tiny");  // 2 layers, hidden 64
  const auto model = build_model(config, 3);
  const std::vector<int64_t> micro_batches = {1, 2};
  const ProfileWindows windows{1, 3};
  // A settle that sleeps 50 ms: inside the timing, the pieces before it would take it.
  int settles = 0;
  const ComputePacing sleepy{1.0, [&settles] {
                               ++settles;
                               std::this_thread::sleep_for(std::chrono::milliseconds(50));
                             }};
  const PartTimes slept = time_part(*model, Device::cpu(), micro_batches, 16, sleepy, windows);
  REQUIRE(slept.micro_batches.size() == 2);
  // Per window: each micro-batch size's settling and timed pass, after its forward and after its
  // backward, then the optimizer.
  CHECK(settles == 4 * (2 * 2 * 2 + 1));
  for (const PieceTimes& t : slept.micro_batches) {
    CHECK(t.layer_forward_s < 25e-3);  // this model's layer: well under a millisecond
    CHECK(t.layer_backward_s < 25e-3);
    CHECK(t.head_forward_s < 25e-3);
    CHECK(t.embed_backward_s < 25e-3);
    CHECK(t.layer_activation_bytes > 0);
  }
  CHECK(slept.optimizer_s < 25e-3);
  // Slowdown 1000 multiplies each piece's wall time (the medians of two runs: generous bounds).
  const PartTimes plain = time_part(*model, Device::cpu(), micro_batches, 16, {}, windows);
  const PartTimes slowed = time_part(*model, Device::cpu(), micro_batches, 16, {1000.0, [] {}}, windows);
  const double ratio = slowed.micro_batches[1].layer_forward_s / plain.micro_batches[1].layer_forward_s;
  CHECK(ratio > 50);
  CHECK(ratio < 20000);
  CHECK_THROWS_AS(time_part(*model, Device::cpu(), micro_batches, 16, {0.5, [] {}}, windows), Error);
}

TEST_CASE("profile windows: rounds of windows gather into one estimate, each round warmed up", "[profile_measure]") {
  // profile_cluster takes a part's windows in rounds (interleaving its tp degrees): each round
  // runs its own warm-up, discarded, and adds its measured windows to the ones gathered so far.
  const OneThread one_thread;
  ModelConfig config = *find_flavor(Arch::gpt2, "tiny");
  const auto model = build_model(config, 3);
  const std::vector<int64_t> micro_batches = {1, 2};
  int settles = 0;
  const ComputePacing count{1.0, [&settles] { ++settles; }};
  PartWindows gathered;
  measure_windows(*model, Device::cpu(), micro_batches, 16, count, ProfileWindows{1, 2}, gathered);
  measure_windows(*model, Device::cpu(), micro_batches, 16, count, ProfileWindows{1, 3}, gathered);
  // Per window: 2 sizes x (a settling and a timed pass) x 2 settles each, then the optimizer's.
  CHECK(settles == (1 + 2 + 1 + 3) * (2 * 2 * 2 + 1));
  REQUIRE(gathered.micro_batches.size() == 2);
  for (const std::vector<PieceTimes>& windows : gathered.micro_batches) CHECK(windows.size() == 5);
  REQUIRE(gathered.optimizer_s.size() == 5);
  // The estimate is over all 5 windows: the third (1) at each end dropped, the middle 3 averaged.
  std::vector<double> steps = gathered.optimizer_s;
  std::sort(steps.begin(), steps.end());
  CHECK(estimate_part(gathered, config.layers).optimizer_s == Approx((steps[1] + steps[2] + steps[3]) / 3));
}

TEST_CASE("profile windows: every pass adds to gradients the part already holds", "[profile_measure]") {
  // A training step's micro-batches after the first add each gradient to the one held; a pass
  // after zero_grad would write them fresh and miss that. Each settle (after a micro-batch's
  // forward, after its backward, after the optimizer) looks at the part's parameters.
  const OneThread one_thread;
  ModelConfig config = *find_flavor(Arch::gpt2, "tiny");
  const auto model = build_model(config, 3);
  const std::vector<nn::NamedParameter> params = model->named_parameters();
  int settles = 0, without_gradients = 0;
  const ComputePacing check{1.0, [&] {
                              ++settles;
                              for (const nn::NamedParameter& p : params) {
                                if (!p.tensor.grad().defined()) ++without_gradients;
                              }
                            }};
  time_part(*model, Device::cpu(), std::vector<int64_t>{1, 2}, 16, check, ProfileWindows{1, 2});
  CHECK(settles == 3 * (2 * 2 * 2 + 1));
  CHECK(without_gradients == 0);
  for (const nn::NamedParameter& p : params) CHECK_FALSE(p.tensor.grad().defined());  // none left behind
}

TEST_CASE("profile tokens cover the vocabulary: every tp rank's shard gets its share", "[profile_measure]") {
  // At tp k the vocabulary is split into k ranges; counted here by a plain loop over the ids.
  for (int64_t vocab : {256, 50257, 1000}) {
    const int64_t micro_batch = 4, seq_len = 128;
    const std::vector<double> ids = to_vector(profile_tokens(micro_batch, seq_len, vocab, 0));
    const std::vector<double> targets = to_vector(profile_tokens(micro_batch, seq_len, vocab, 7));
    REQUIRE(ids.size() == static_cast<size_t>(micro_batch * seq_len));
    for (const std::vector<double>* tokens : {&ids, &targets}) {
      for (int64_t k : {2, 4}) {
        std::vector<int64_t> per_shard(static_cast<size_t>(k), 0);
        const int64_t shard = (vocab + k - 1) / k;
        for (double token : *tokens) {
          const auto id = static_cast<int64_t>(token);
          REQUIRE(id >= 0);
          REQUIRE(id < vocab);
          ++per_shard[static_cast<size_t>(id / shard)];
        }
        const double fair = static_cast<double>(tokens->size()) / static_cast<double>(k);
        for (int64_t n : per_shard) CHECK(std::abs(static_cast<double>(n) - fair) <= 0.25 * fair);
      }
    }
    CHECK(ids != targets);
  }
}
