// The cost model (lib/plan) against schedules timed by hand in the comments below: the
// pipeline critical path of GPipe and 1F1B with uneven stages and paired sends, the textbook
// (m + S - 1)(F + B) of uniform stages, activations in flight per stage, and the step and
// peak memory of a layout of two unlike replicas.
#include <catch2/catch.hpp>

#include "lib/plan/cost_model.h"
#include "lib/util/error.h"

using namespace hetu;
using namespace hetu::plan;
using pipeline::ScheduleKind;

namespace {

// Stage times of the hand-timed cases: forwards 1, 2, 1; backwards 2, 4, 2; the 0->1 edge
// costs 0.5, the 1->2 edge 0.25 (each way).
std::vector<StageTimes> uneven() { return {{1, 2, 0.5}, {2, 4, 0.25}, {1, 2, 0}}; }

double end_of(const PipelineTime& t, int64_t stage, pipeline::PipeOp op, int64_t mb) {
  for (const ActionSpan& span : t.spans[static_cast<size_t>(stage)]) {
    if (span.action.op == op && span.action.micro_batch == mb) return span.end_s;
  }
  FAIL("no action");
  return 0;
}

}  // namespace

TEST_CASE("pipeline time: 1F1B on 3 uneven stages, timed by hand", "[cost_model]") {
  // Lists (2 micro-batches): s0 F0 F1 B0 B1 | s1 F0 F1 B0 B1 | s2 F0 B0 F1 B1. Paired batches:
  // a message moves once both sides are posted; a stage waits for its whole batch.
  // s0: F0 [0,1]; batch {send A0} posted 1, s1's {recv A0} posted 0: arrives 1.5
  // s0: F1 [1.5,2.5]; batch {send A1, recv G0} posted 2.5
  // s1: F0 [1.5,3.5]; batch {send A0, recv A1} posted 3.5: A0 at 3.75, A1 at max(2.5, 3.5) + 0.5 = 4
  // s2: F0 [3.75,4.75]  B0 [4.75,6.75] (empty batch); batch {send G0, recv A1} posted 6.75
  // s1: F1 [4,6]; batch {send A1, recv G0} posted 6: A1 at 6.75 + 0.25 = 7, G0 at 7
  // s2: F1 [7,8]  B1 [8,10]; batch {send G1} posted 10
  // s1: B0 [7,11]; batch {send G0, recv G1} posted 11: G0 at 11.5, G1 at 11.25
  // s0: B0 [11.5,13.5]; batch {recv G1} posted 13.5.  s1: B1 [11.5,15.5]; {send G1} at 15.5
  // s0: B1 [16,18] (15.5 + 0.5)
  const PipelineTime t = pipeline_time(ScheduleKind::one_f_one_b, 2, uneven());
  CHECK(t.makespan_s == Approx(18));
  CHECK(end_of(t, 0, pipeline::PipeOp::forward, 1) == Approx(2.5));  // the sender waited for its receiver
  CHECK(end_of(t, 2, pipeline::PipeOp::forward, 0) == Approx(4.75));
  CHECK(end_of(t, 1, pipeline::PipeOp::forward, 1) == Approx(6));
  CHECK(end_of(t, 1, pipeline::PipeOp::backward, 0) == Approx(11));
  CHECK(end_of(t, 1, pipeline::PipeOp::backward, 1) == Approx(15.5));
  CHECK(end_of(t, 0, pipeline::PipeOp::backward, 0) == Approx(13.5));
  CHECK(t.busy_s == std::vector<double>{6, 12, 6});
  CHECK(t.bubble(0) == Approx(1 - 6 / 18.0));
  CHECK(t.bubble(1) == Approx(1 - 12 / 18.0));
}

TEST_CASE("pipeline time: GPipe on 3 uneven stages, timed by hand", "[cost_model]") {
  // Every list F0 F1 B0 B1.
  // s0: F0 [0,1]  F1 [1.5,2.5] (its send of A0 arrives 1.5); batch {send A1, recv G0} at 2.5
  // s1: F0 [1.5,3.5]; {send A0, recv A1} at 3.5 -> 4;  F1 [4,6]; {send A1, recv G0} at 6
  // s2: F0 [3.75,4.75]; {recv A1} at 4.75 -> 6.25;  F1 [6.25,7.25]  B0 [7.25,9.25]; {send G0} -> 9.5
  // s2: B1 [9.5,11.5].  s1: B0 [9.5,13.5]; {send G0, recv G1} at 13.5 -> 14;  B1 [14,18]
  // s0: B0 [14,16]; {recv G1} at 16, sent at 18 -> 18.5;  B1 [18.5,20.5]
  const PipelineTime t = pipeline_time(ScheduleKind::gpipe, 2, uneven());
  CHECK(t.makespan_s == Approx(20.5));
  CHECK(end_of(t, 2, pipeline::PipeOp::forward, 1) == Approx(7.25));
  CHECK(end_of(t, 1, pipeline::PipeOp::backward, 1) == Approx(18));
}

TEST_CASE("pipeline time: a fast stage waits for its slow neighbour to take its output", "[cost_model]") {
  // GPipe, 3 micro-batches, s0 F 1 B 1, s1 F 3 B 3, sends free. s0's send of F1 completes
  // when s1 posts its receive of F1, after its F0 [1,4]; so s0's F2 runs [4,5], not [2,3].
  // s1: F0 [1,4] F1 [4,7] F2 [7,10] B0 [10,13] B1 [13,16] B2 [16,19]; s0: B2 [19,20].
  const PipelineTime t = pipeline_time(ScheduleKind::gpipe, 3, {StageTimes{1, 1, 0}, StageTimes{3, 3, 0}});
  CHECK(end_of(t, 0, pipeline::PipeOp::forward, 2) == Approx(5));
  CHECK(end_of(t, 0, pipeline::PipeOp::backward, 0) == Approx(14));
  CHECK(t.makespan_s == Approx(20));
}

TEST_CASE("pipeline time: uniform stages take (m + S - 1)(F + B) in both schedules", "[cost_model]") {
  const std::vector<StageTimes> uniform(3, StageTimes{1, 2, 0});
  for (ScheduleKind kind : {ScheduleKind::gpipe, ScheduleKind::one_f_one_b}) {
    INFO(pipeline::to_string(kind));
    CHECK(pipeline_time(kind, 4, uniform).makespan_s == Approx((4 + 3 - 1) * (1 + 2)));
    CHECK(pipeline_time(kind, 1, uniform).makespan_s == Approx(3 * (1 + 2)));
  }
  // One stage: just the sum.
  CHECK(pipeline_time(ScheduleKind::one_f_one_b, 5, {StageTimes{1, 2, 9}}).makespan_s == Approx(15));
}

TEST_CASE("activations in flight: GPipe holds every micro-batch, 1F1B up to the stage depth", "[cost_model]") {
  for (int64_t s = 0; s < 3; ++s) {
    CHECK(micro_batches_in_flight(ScheduleKind::gpipe, 3, 4, s) == 4);
    CHECK(micro_batches_in_flight(ScheduleKind::one_f_one_b, 3, 4, s) == 3 - s);
    CHECK(micro_batches_in_flight(ScheduleKind::one_f_one_b, 3, 2, s) == std::min<int64_t>(2, 3 - s));
  }
}

TEST_CASE("layout cost: the slowest pipeline, then the slowest sync and optimizer, and memory per stage",
          "[cost_model]") {
  // Replica 0: one stage, 2 micro-batches of F 1 + B 2 -> 6 s. Replica 1: the uneven GPipe
  // pipeline above -> 20.5 s (1F1B: 18 s). Syncs 0.3 / 0.5 / 0.4 / 0.2, optimizers 0.1 / 0.2 / 0.05 / 0.05.
  ReplicaCost a{ScheduleKind::one_f_one_b, 2, {StageCost{{1, 2, 0}, 100, 10, 5, 0.3, 0.1, 0}}};
  ReplicaCost b{ScheduleKind::gpipe, 2, {}};
  const std::vector<StageTimes> times = uneven();
  const double sync[] = {0.5, 0.4, 0.2}, opt[] = {0.2, 0.05, 0.05};
  for (size_t s = 0; s < 3; ++s) b.stages.push_back(StageCost{times[s], 40, 8, 1, sync[s], opt[s], 0});
  const LayoutPrediction p = predict_layout({a, b});
  REQUIRE(p.replica_pipeline_s.size() == 2);
  CHECK(p.replica_pipeline_s[0] == Approx(6));
  CHECK(p.replica_pipeline_s[1] == Approx(20.5));
  CHECK(p.step_s == Approx(20.5 + 0.5 + 0.2));
  // Memory: weights, gradients, m and v (4 x params) + activations in flight + workspace.
  CHECK(p.peak_bytes[0][0] == Approx(4 * 100 + 1 * 10 + 5));   // 1F1B, one stage: one micro-batch at a time
  CHECK(p.peak_bytes[1][2] == Approx(4 * 40 + 2 * 8 + 1));     // GPipe: both micro-batches
  CHECK(p.in_flight[1] == std::vector<int64_t>{2, 2, 2});
  b.schedule = ScheduleKind::one_f_one_b;
  const LayoutPrediction q = predict_layout({a, b});
  CHECK(q.in_flight[1] == std::vector<int64_t>{2, 2, 1});
  CHECK(q.peak_bytes[1][2] == Approx(4 * 40 + 1 * 8 + 1));
  CHECK(q.step_s == Approx(18 + 0.5 + 0.2));
  CHECK(q.bubble[1][0] == Approx(1 - 6 / 18.0));
}

TEST_CASE("layout cost: ZeRO-1 keeps a share of the moments and master weights, and of AdamW's time", "[cost_model]") {
  // Two replicas of one stage each, 2 micro-batches (so the first one's gradients are there at
  // the second one's peak; 100 parameter bytes per device; activations 10, workspace 5; AdamW
  // 0.1 s): replicated, 4 x 100 (weight, gradient, m, v); with ZeRO-1 over both,
  // weight and gradient whole (200) + m, v and the master weight halved (150), AdamW 0.05 s.
  const StageCost plain{{1, 2, 0}, 100, 10, 5, 0.3, 0.1, 0};
  StageCost zero = plain;
  zero.zero_state_share = 0.5;
  const LayoutPrediction p = predict_layout({{ScheduleKind::one_f_one_b, 2, {plain}}, {ScheduleKind::one_f_one_b, 2, {plain}}});
  const LayoutPrediction q = predict_layout({{ScheduleKind::one_f_one_b, 2, {zero}}, {ScheduleKind::one_f_one_b, 2, {zero}}});
  CHECK(p.peak_bytes[0][0] == Approx(400 + 10 + 5));
  CHECK(q.peak_bytes[0][0] == Approx(200 + 150 + 10 + 5));
  CHECK(q.peak_bytes[1][0] == Approx(200 + 150 + 10 + 5));
  CHECK(p.optimizer_s == Approx(0.1));
  CHECK(q.optimizer_s == Approx(0.05));
  CHECK(q.step_s == Approx(p.step_s - 0.05));
  // Over 8 holders: 200 + 3 x 100 / 8.
  zero.zero_state_share = 0.125;
  CHECK(predict_layout({{ScheduleKind::one_f_one_b, 2, {zero}}}).peak_bytes[0][0] == Approx(200 + 37.5 + 15));
  zero.zero_state_share = 1.5;
  CHECK_THROWS_AS(predict_layout({{ScheduleKind::one_f_one_b, 1, {zero}}}), UsageError);
}

TEST_CASE("layout cost: bad input is refused", "[cost_model]") {
  CHECK_THROWS_AS(predict_layout({}), UsageError);
  CHECK_THROWS_AS(predict_layout({ReplicaCost{ScheduleKind::gpipe, 0, {StageCost{}}}}), UsageError);
  CHECK_THROWS_AS(pipeline_time(ScheduleKind::gpipe, 1, {StageTimes{-1, 0, 0}}), UsageError);
}
