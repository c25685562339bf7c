// The step timer (lib/util/step_timer.h) against sleeps of known length: exclusive time per
// phase, the attribution of nested scopes (Note [Phase attribution]), trace events that never
// overlap on a track, the step-range parser; and the cross-rank summary (step_telemetry.h)
// against a naive loop over hand-made values.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "lib/runtime/step_telemetry.h"
#include "lib/util/error.h"
#include "lib/util/step_timer.h"

namespace {

using hetu::timing::Phase;
using hetu::timing::Scope;
using hetu::timing::Track;

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }
double seconds(const hetu::timing::Totals& t, Phase p) { return t.seconds[static_cast<size_t>(p)]; }

}  // namespace

TEST_CASE("nested scopes count exclusive time in the phase the note gives", "[step_timer]") {
  hetu::timing::take_totals();
  {
    Scope forward(Phase::forward, "forward");
    sleep_ms(30);
    {
      Scope collective(Phase::comm, "all_reduce", Track::comm);  // inside forward: tp
      sleep_ms(20);
    }
  }
  {
    Scope wait(Phase::pipe_wait);
    Scope batch(Phase::comm, "send_recv", Track::comm);  // inside a pipeline exchange: pipe_wait
    sleep_ms(20);
  }
  { Scope top(Phase::comm, "all_reduce", Track::comm); sleep_ms(20); }  // alone: grad_sync
  {
    Scope eval(Phase::eval, "eval");
    Scope fwd(Phase::forward, "forward");  // an evaluation's forward is eval time
    Scope c(Phase::comm, "send_recv", Track::comm);
    sleep_ms(20);
  }
  sleep_ms(20);  // no scope: other
  const hetu::timing::Totals t = hetu::timing::take_totals();
  // Sleeps overshoot by scheduler latency; a wrong attribution moves 20 ms or more.
  CHECK(seconds(t, Phase::forward) == Approx(0.030).margin(0.009));
  CHECK(seconds(t, Phase::tp_comm) == Approx(0.020).margin(0.009));
  CHECK(seconds(t, Phase::pipe_wait) == Approx(0.020).margin(0.009));
  CHECK(seconds(t, Phase::grad_sync) == Approx(0.020).margin(0.009));
  CHECK(seconds(t, Phase::eval) == Approx(0.020).margin(0.009));
  CHECK(seconds(t, Phase::other) >= 0.019);
  double sum = 0;
  for (double s : t.seconds) sum += s;
  CHECK(sum == Approx(t.wall).epsilon(1e-6));
  CHECK(t.wall >= 0.129);  // 130 ms of sleeps
}

TEST_CASE("traced scopes become events, and a track's events never overlap", "[step_timer]") {
  hetu::timing::take_events();
  hetu::timing::set_tracing(true);
  hetu::timing::set_step(7);
  {
    Scope step(Phase::optimizer, "optimizer");
    { Scope inner(Phase::forward, "forward", Track::compute, {{"mb", 3}}); sleep_ms(2); }  // nested: not an event
    { Scope c(Phase::comm, "all_reduce", Track::comm, {{"bytes", 64}}); sleep_ms(2); }
  }
  { Scope untraced(Phase::data); sleep_ms(1); }  // unnamed: timing only
  hetu::timing::set_tracing(false);
  { Scope off(Phase::forward, "forward"); }
  const std::vector<hetu::timing::TraceEvent> events = hetu::timing::take_events();
  REQUIRE(events.size() == 2);
  CHECK(events[0].name == "all_reduce");
  CHECK(events[0].track == Track::comm);
  CHECK(events[0].args == "\"bytes\":64");
  CHECK(events[0].step == 7);
  CHECK(events[1].name == "optimizer");
  CHECK(events[1].duration_us >= 4000);
  CHECK(events[0].start_us >= events[1].start_us);
}

TEST_CASE("HETU_TIMING=0 semantics: a disabled timer records nothing", "[step_timer]") {
  hetu::timing::take_totals();
  hetu::timing::set_enabled(false);
  { Scope s(Phase::forward, "forward"); sleep_ms(10); }
  hetu::timing::set_enabled(true);
  const hetu::timing::Totals t = hetu::timing::take_totals();
  CHECK(seconds(t, Phase::forward) == 0);
  CHECK(seconds(t, Phase::other) >= 0.009);
}

TEST_CASE("step ranges parse, and bad ones name the key", "[step_timer]") {
  using hetu::timing::parse_step_range;
  CHECK(parse_step_range("20-22", "k") == std::pair<int64_t, int64_t>{20, 22});
  CHECK(parse_step_range("7", "k") == std::pair<int64_t, int64_t>{7, 7});
  CHECK(parse_step_range("", "k") == std::pair<int64_t, int64_t>{0, -1});
  for (const char* bad : {"0-2", "3-1", "a", "2-", "-2", "1-2-3", " 2"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_step_range(bad, "training.trace"), hetu::UsageError);
    CHECK_THROWS_WITH(parse_step_range(bad, "training.trace"), Catch::Matchers::Contains("training.trace"));
  }
}

TEST_CASE("the cross-rank summary matches a naive loop", "[step_timer]") {
  constexpr int64_t k = hetu::runtime::StepTelemetry::kFields;
  const int64_t ranks = 3;
  std::vector<double> values(static_cast<size_t>(ranks * k));
  for (int64_t r = 0; r < ranks; ++r)
    for (int64_t f = 0; f < k; ++f) values[static_cast<size_t>(r * k + f)] = static_cast<double>((r * 7 + f * 3) % 5) + 0.1 * r;
  const hetu::runtime::TimingSummary s = hetu::runtime::summarize_timings(values, ranks);
  for (int p = 0; p < hetu::timing::kNumPhases; ++p) {
    double lo = 1e9, hi = -1e9, mean = 0;
    int64_t slowest = -1;
    for (int64_t r = 0; r < ranks; ++r) {
      const double v = values[static_cast<size_t>(r * k + 1 + p)];
      lo = std::min(lo, v);
      if (v > hi) hi = v, slowest = r;
      mean += v / ranks;
    }
    INFO("phase " << p);
    CHECK(s.phases[static_cast<size_t>(p)].min == lo);
    CHECK(s.phases[static_cast<size_t>(p)].max == hi);
    CHECK(s.phases[static_cast<size_t>(p)].mean == Approx(mean));
    CHECK(s.phases[static_cast<size_t>(p)].slowest == slowest);
  }
  // compute = forward + backward; the straggler is the rank with the most of it.
  double best = -1;
  int64_t straggler = -1;
  for (int64_t r = 0; r < ranks; ++r) {
    const double c = values[static_cast<size_t>(r * k + 1)] + values[static_cast<size_t>(r * k + 2)];
    if (c > best) best = c, straggler = r;
  }
  CHECK(s.compute.slowest == straggler);
  CHECK(s.compute.max == Approx(best));
}

TEST_CASE("the cross-rank JSON lists each rank's peak memory when collected", "[step_timer]") {
  constexpr int64_t k = hetu::runtime::StepTelemetry::kFields;
  hetu::runtime::TimingSummary s = hetu::runtime::summarize_timings(std::vector<double>(2 * k, 1.0), 2);
  CHECK(hetu::runtime::timing_json(s).find("peak_mem_gib") == std::string::npos);
  s.peak_mem_gib = {0.25, 1.5};
  const std::string json = hetu::runtime::timing_json(s);
  CHECK(json.find(R"("by_rank":{"step_s":[1,1])") != std::string::npos);
  CHECK(json.find(R"(,"peak_mem_gib":[0.25,1.5]}})") != std::string::npos);  // inside by_rank, its last list
}
