// Straggler detection and re-plan decisions (lib/runtime/straggler.h) against hand-made
// compute times: the threshold, the window, the cluster's pace, recovery, and the watch's
// hysteresis and min_gain over 4 ranks that are threads (tests/nn/thread_group_comm.h), with a
// planner whose predictions the test states.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <vector>

#include "lib/runtime/straggler.h"
#include "tests/nn/thread_group_comm.h"

namespace {

using hetu::runtime::StragglerDetector;
using hetu::runtime::StragglerFinding;
using hetu::runtime::StragglerOptions;
using hetu::runtime::StragglerPlanner;
using hetu::runtime::StragglerWatch;
using hetu::runtime::StrategyRun;

const std::vector<double> kExpected = {1.0, 1.0, 1.0, 1.0};

TEST_CASE("jitter below the threshold never triggers a re-plan", "[straggler]") {
  StragglerDetector detector({});  // threshold 1.2, window 5
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> jitter(0.9, 1.1);  // +-10% on every rank, every step
  for (int step = 0; step < 2000; ++step) {
    std::vector<double> measured;
    for (int r = 0; r < 4; ++r) measured.push_back(jitter(rng));
    REQUIRE_FALSE(detector.observe(measured, kExpected).has_value());
  }
}

TEST_CASE("a rank out of line for `window` consecutive steps is found, with its factor", "[straggler]") {
  StragglerDetector detector({.threshold = 1.2, .window = 5, .min_gain = 0.1});
  for (int step = 0; step < 4; ++step) REQUIRE_FALSE(detector.observe({1, 1, 1, 3}, kExpected));
  const std::optional<StragglerFinding> found = detector.observe({1, 1, 1, 3}, kExpected);
  REQUIRE(found.has_value());
  CHECK(found->ranks == std::vector<int64_t>{3});
  CHECK(found->factor == std::vector<double>{1, 1, 1, 3});
  CHECK(found->measured_s[3] == 3);
  CHECK(found->expected_s[3] == 1);
}

TEST_CASE("the window counts consecutive steps: one step in line starts it again", "[straggler]") {
  StragglerDetector detector({});
  for (int round = 0; round < 10; ++round) {
    for (int step = 0; step < 4; ++step) REQUIRE_FALSE(detector.observe({1, 1, 1, 3}, kExpected));
    REQUIRE_FALSE(detector.observe({1, 1, 1, 1.1}, kExpected));
  }
}

TEST_CASE("every rank slower at once is the cluster's pace, not a straggler", "[straggler]") {
  StragglerDetector detector({});
  for (int step = 0; step < 20; ++step) REQUIRE_FALSE(detector.observe({2.5, 2.4, 2.6, 2.5}, kExpected));
  // Against the pace, one of two ranks 3x slower still stands out (the lower median).
  StragglerDetector two({});
  std::optional<StragglerFinding> found;
  for (int step = 0; step < 5; ++step) found = two.observe({1, 3}, {1, 1});
  REQUIRE(found.has_value());
  CHECK(found->ranks == std::vector<int64_t>{1});
}

TEST_CASE("a device that recovers is out of line the other way, and idle ranks are ignored", "[straggler]") {
  StragglerDetector detector({});
  std::optional<StragglerFinding> found;
  for (int step = 0; step < 5; ++step) found = detector.observe({1, 1, 1, 1, 9}, {1, 1, 1, 3, 0});
  REQUIRE(found.has_value());
  CHECK(found->ranks == std::vector<int64_t>{3});
  CHECK(found->factor[3] == Approx(1.0 / 3));
  CHECK(found->factor[4] == 1);
}

// A planner whose expected compute is base x slowdown and whose re-plan predicts
// `planned_step_s` against a current step of 1 s.
class FakePlanner final : public StragglerPlanner {
 public:
  explicit FakePlanner(double planned_step_s) : planned_step_s_(planned_step_s) {}
  std::vector<double> expected_compute(const std::vector<double>& slowdown) override {
    std::vector<double> out;
    for (double s : slowdown) out.push_back(0.1 * s);
    return out;
  }
  Plan replan(const std::vector<double>& slowdown) override {
    ++replans;
    last_slowdown = slowdown;
    return {1.0, planned_step_s_, true, "the planned layout", [] { return StrategyRun{}; }};
  }
  void adopt(const Plan&) override { ++adopted; }
  double planned_step_s_;
  int replans = 0, adopted = 0;
  std::vector<double> last_slowdown;
};

struct RankOutcome {
  std::vector<int64_t> switch_steps;  // steps after which the watch returned a run to switch to
  int replans = 0, adopted = 0;
  std::vector<double> slowdown;       // what the watch assumes at the end
};

// 4 ranks run `steps` steps; rank r's compute in step s (1-based) is 0.1 x speed(r, s) s.
std::vector<RankOutcome> run_watch(double planned_step_s, int64_t steps, double (*speed)(int64_t rank, int64_t step),
                                   StragglerOptions options = {}) {
  hetu::test::ThreadGroup group(4);
  std::vector<RankOutcome> outcomes(4);
  group.run([&](int64_t rank, hetu::Communicator& comm) {
    auto planner = std::make_unique<FakePlanner>(planned_step_s);
    FakePlanner* fake = planner.get();
    double clock = 0;
    StragglerWatch watch(options, &comm, [&clock] { return clock; }, std::move(planner));
    RankOutcome& out = outcomes[static_cast<size_t>(rank)];
    for (int64_t step = 1; step <= steps; ++step) {
      watch.step_begins();
      clock += 0.1 * speed(rank, step);
      watch.step_computed();
      if (watch.after_step(step, step > 1)) out.switch_steps.push_back(step);
    }
    out.replans = fake->replans;
    out.adopted = fake->adopted;
    out.slowdown = watch.slowdown();
  });
  return outcomes;
}

double slow_from_step_10(int64_t rank, int64_t step) { return rank == 2 && step >= 10 ? 3.0 : 1.0; }

TEST_CASE("every rank takes the same decision: a slow rank re-plans and switches once", "[straggler]") {
  const std::vector<RankOutcome> outcomes = run_watch(/*planned_step_s=*/0.5, 40, slow_from_step_10);
  for (const RankOutcome& out : outcomes) {
    CHECK(out.switch_steps == std::vector<int64_t>{14});  // samples of steps 10-14
    CHECK(out.replans == 1);  // the slowdown is known afterwards: the same speeds do not trigger again
    CHECK(out.adopted == 1);
    CHECK(out.slowdown == std::vector<double>{1, 1, 3, 1});
  }
}

TEST_CASE("a re-plan below min_gain keeps the layout, and the same speeds do not re-plan again", "[straggler]") {
  const std::vector<RankOutcome> outcomes = run_watch(/*planned_step_s=*/0.95, 40, slow_from_step_10);  // 5% gain
  for (const RankOutcome& out : outcomes) {
    CHECK(out.switch_steps.empty());
    CHECK(out.replans == 1);
    CHECK(out.adopted == 0);
    CHECK(out.slowdown == std::vector<double>{1, 1, 3, 1});
  }
}

double slow_then_recovered(int64_t rank, int64_t step) { return rank == 2 && step >= 10 && step < 25 ? 3.0 : 1.0; }

TEST_CASE("a device that recovers gets work back only through a re-plan that predicts the gain", "[straggler]") {
  SECTION("the gain is predicted: a second switch") {
    const std::vector<RankOutcome> outcomes = run_watch(0.5, 40, slow_then_recovered);
    for (const RankOutcome& out : outcomes) {
      CHECK(out.switch_steps == std::vector<int64_t>{14, 29});  // recovered from step 25: samples 25-29
      CHECK(out.slowdown[2] == Approx(1.0));
    }
  }
  SECTION("it is not: the layout stays") {
    const std::vector<RankOutcome> outcomes =
        run_watch(0.5, 40, slow_then_recovered, {.threshold = 1.2, .window = 5, .min_gain = 1.5});  // 100% < 150%
    for (const RankOutcome& out : outcomes) {
      CHECK(out.switch_steps.empty());
      CHECK(out.replans == 2);
    }
  }
}

}  // namespace
