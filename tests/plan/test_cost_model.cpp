// The cost model (lib/plan) against schedules timed by hand in the comments below: the
// pipeline critical path of GPipe and 1F1B with uneven stages and sends, the textbook
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
  // Lists (2 micro-batches): s0 F0 F1 B0 B1 | s1 F0 F1 B0 B1 | s2 F0 B0 F1 B1. After each
  // action a stage pays its send, posts {send, next receive} and waits for both partners'
  // posts (P = posted at). Edge 0-1 costs 0.5, edge 1-2 0.25, each way.
  // s0: F0 [0,1] P 1.5 | F1 [1.5,2.5] P 3
  // s1: F0 [1.5,3.5] P 3.75 | F1 [3.75,5.75] (its input posted at 3) P 6
  // s2: F0 [3.75,4.75] | B0 [4.75,6.75] P 7 | F1 [7,8] | B1 [8,10] P 10.25
  // s1: B0 [7,11] (needs s2's post after B0) P 11.5 | B1 [11.5,15.5] P 16
  // s0: B0 [11.5,13.5] | B1 [16,18]                                          makespan 18
  const PipelineTime t = pipeline_time(ScheduleKind::one_f_one_b, 2, uneven());
  CHECK(t.makespan_s == Approx(18));
  CHECK(end_of(t, 2, pipeline::PipeOp::forward, 0) == Approx(4.75));
  CHECK(end_of(t, 2, pipeline::PipeOp::forward, 1) == Approx(8));
  CHECK(end_of(t, 1, pipeline::PipeOp::backward, 0) == Approx(11));
  CHECK(end_of(t, 1, pipeline::PipeOp::backward, 1) == Approx(15.5));
  CHECK(end_of(t, 0, pipeline::PipeOp::backward, 0) == Approx(13.5));
  CHECK(t.busy_s == std::vector<double>{6, 12, 6});
  CHECK(t.bubble(0) == Approx(1 - 6 / 18.0));
  CHECK(t.bubble(1) == Approx(1 - 12 / 18.0));
}

TEST_CASE("pipeline time: GPipe on 3 uneven stages, timed by hand", "[cost_model]") {
  // Every list F0 F1 B0 B1.
  // s0: F0 [0,1] P 1.5 | F1 [1.5,2.5] P 3;  s1: F0 [1.5,3.5] P 3.75 | F1 [3.75,5.75] P 6
  // s2: F0 [3.75,4.75] | F1 [6,7] | B0 [7,9] P 9.25 | B1 [9.25,11.25] P 11.5
  // s1: B0 [9.25,13.25] P 13.75 | B1 [13.75,17.75] P 18.25
  // s0: B0 [13.75,15.75] | B1 [18.25,20.25]                                  makespan 20.25
  const PipelineTime t = pipeline_time(ScheduleKind::gpipe, 2, uneven());
  CHECK(t.makespan_s == Approx(20.25));
  CHECK(end_of(t, 2, pipeline::PipeOp::forward, 1) == Approx(7));
  CHECK(end_of(t, 1, pipeline::PipeOp::backward, 1) == Approx(17.75));
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
  // pipeline above -> 20.25 s. Syncs 0.3 / 0.5 / 0.4 / 0.2, optimizers 0.1 / 0.2 / 0.05 / 0.05.
  ReplicaCost a{ScheduleKind::one_f_one_b, 2, {StageCost{{1, 2, 0}, 100, 10, 5, 0.3, 0.1}}};
  ReplicaCost b{ScheduleKind::gpipe, 2, {}};
  const std::vector<StageTimes> times = uneven();
  const double sync[] = {0.5, 0.4, 0.2}, opt[] = {0.2, 0.05, 0.05};
  for (size_t s = 0; s < 3; ++s) b.stages.push_back(StageCost{times[s], 40, 8, 1, sync[s], opt[s]});
  const LayoutPrediction p = predict_layout({a, b});
  REQUIRE(p.replica_pipeline_s.size() == 2);
  CHECK(p.replica_pipeline_s[0] == Approx(6));
  CHECK(p.replica_pipeline_s[1] == Approx(20.25));
  CHECK(p.step_s == Approx(20.25 + 0.5 + 0.2));
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

TEST_CASE("peak memory: the oldest micro-batch's head is released, the sync's buffer is a later moment",
          "[cost_model]") {
  // State 4 x 100; 3 micro-batches of 10 bytes each (2 of them the head's); workspace 5.
  StageCost last;
  last.param_bytes = 100;
  last.activation_bytes = 10;
  last.head_activation_bytes = 2;
  last.workspace_bytes = 5;
  CHECK(peak_bytes(last, 3, 4) == Approx(400 + 3 * 10 - 2 + 5));
  // One micro-batch: its backward creates the gradients (100) as it frees the activations
  // (200 here); the end of the step still holds all 400 of the state.
  StageCost big = last;
  big.activation_bytes = 200;
  CHECK(peak_bytes(big, 1, 1) == Approx(300 + 200 - 2 + 5));
  CHECK(peak_bytes(big, 1, 2) == Approx(400 + 200 - 2 + 5));
  CHECK(peak_bytes(last, 1, 1) == Approx(400));
  // A sync buffer larger than the activations and workspace sets the peak after the pipeline.
  last.sync_buffer_bytes = 40;
  CHECK(peak_bytes(last, 1, 1) == Approx(400 + 40));
  last.sync_buffer_bytes = 20;
  CHECK(peak_bytes(last, 3, 4) == Approx(400 + 3 * 10 - 2 + 5));
}

TEST_CASE("layout cost: bad input is refused", "[cost_model]") {
  CHECK_THROWS_AS(predict_layout({}), UsageError);
  CHECK_THROWS_AS(predict_layout({ReplicaCost{ScheduleKind::gpipe, 0, {StageCost{}}}}), UsageError);
  CHECK_THROWS_AS(pipeline_time(ScheduleKind::gpipe, 1, {StageTimes{-1, 0, 0}}), UsageError);
}
