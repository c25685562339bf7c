// Pipeline schedules: golden action lists and timelines for 4 stages x 8 micro-batches (worked
// out by hand, written literally), both validators over gpipe and 1f1b for 1..6 stages and
// 1..10 micro-batches, schedules each validator must reject, and bad arguments.
#include <catch2/catch.hpp>

#include <sstream>

#include "lib/pipeline/pipeline_schedule.h"
#include "lib/util/error.h"

using namespace hetu;
using namespace hetu::pipeline;

namespace {

using Schedules = std::vector<std::vector<PipeAction>>;

std::string joined(const std::vector<PipeAction>& actions) {
  std::string out;
  for (const auto& a : actions) out += (out.empty() ? "" : " ") + to_string(a);
  return out;
}

// "F0 F1 B0" -> actions; the inverse of joined().
std::vector<PipeAction> parse(const std::string& text) {
  std::vector<PipeAction> out;
  std::istringstream in(text);
  for (std::string word; in >> word;)
    out.push_back({word[0] == 'F' ? PipeOp::forward : PipeOp::backward, std::stoll(word.substr(1))});
  return out;
}

Schedules all_stages(ScheduleKind kind, int64_t stages, int64_t micro_batches) {
  Schedules out;
  for (int64_t s = 0; s < stages; ++s) out.push_back(make_schedule(kind, stages, micro_batches, s));
  return out;
}

}  // namespace

TEST_CASE("gpipe runs every forward then every backward in increasing order", "[pipeline_schedule]") {
  const std::vector<PipeAction> expected = {
      {PipeOp::forward, 0},  {PipeOp::forward, 1},  {PipeOp::forward, 2},  {PipeOp::forward, 3},
      {PipeOp::forward, 4},  {PipeOp::forward, 5},  {PipeOp::forward, 6},  {PipeOp::forward, 7},
      {PipeOp::backward, 0}, {PipeOp::backward, 1}, {PipeOp::backward, 2}, {PipeOp::backward, 3},
      {PipeOp::backward, 4}, {PipeOp::backward, 5}, {PipeOp::backward, 6}, {PipeOp::backward, 7}};
  for (int64_t s = 0; s < 4; ++s) CHECK(make_schedule(ScheduleKind::gpipe, 4, 8, s) == expected);
}

TEST_CASE("1f1b warms up with stages - stage - 1 forwards then alternates", "[pipeline_schedule]") {
  CHECK(make_schedule(ScheduleKind::one_f_one_b, 4, 8, 0) == parse("F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7"));
  CHECK(joined(make_schedule(ScheduleKind::one_f_one_b, 4, 8, 0)) == "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
  CHECK(joined(make_schedule(ScheduleKind::one_f_one_b, 4, 8, 1)) == "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7");
  CHECK(joined(make_schedule(ScheduleKind::one_f_one_b, 4, 8, 2)) == "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7");
  CHECK(joined(make_schedule(ScheduleKind::one_f_one_b, 4, 8, 3)) == "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
  // Fewer micro-batches than the warmup wants: all forwards, then all backwards.
  CHECK(joined(make_schedule(ScheduleKind::one_f_one_b, 4, 2, 0)) == "F0 F1 B0 B1");
  CHECK(joined(make_schedule(ScheduleKind::one_f_one_b, 4, 2, 1)) == "F0 F1 B0 B1");
  CHECK(joined(make_schedule(ScheduleKind::one_f_one_b, 4, 2, 2)) == "F0 F1 B0 B1");
  CHECK(joined(make_schedule(ScheduleKind::one_f_one_b, 4, 2, 3)) == "F0 B0 F1 B1");
  CHECK(joined(make_schedule(ScheduleKind::one_f_one_b, 1, 3, 0)) == "F0 B0 F1 B1 F2 B2");
}

TEST_CASE("golden gpipe timeline for 4 stages and 8 micro-batches", "[pipeline_schedule]") {
  CHECK(render_timeline(ScheduleKind::gpipe, 4, 8) ==
        "stage 0 | F0 F1 F2 F3 F4 F5 F6 F7 .  .  .  .  .  .  B0 B1 B2 B3 B4 B5 B6 B7\n"
        "stage 1 | .  F0 F1 F2 F3 F4 F5 F6 F7 .  .  .  .  B0 B1 B2 B3 B4 B5 B6 B7 .\n"
        "stage 2 | .  .  F0 F1 F2 F3 F4 F5 F6 F7 .  .  B0 B1 B2 B3 B4 B5 B6 B7 .  .\n"
        "stage 3 | .  .  .  F0 F1 F2 F3 F4 F5 F6 F7 B0 B1 B2 B3 B4 B5 B6 B7 .  .  .\n");
}

TEST_CASE("golden 1f1b timeline for 4 stages and 8 micro-batches", "[pipeline_schedule]") {
  // With backward as long as forward, 1f1b takes as long as gpipe (22 slots); it holds at most
  // stages - stage activations instead of all 8.
  CHECK(render_timeline(ScheduleKind::one_f_one_b, 4, 8) ==
        "stage 0 | F0 F1 F2 F3 .  .  .  B0 F4 B1 F5 B2 F6 B3 F7 B4 .  B5 .  B6 .  B7\n"
        "stage 1 | .  F0 F1 F2 .  .  B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 .  B6 .  B7 .\n"
        "stage 2 | .  .  F0 F1 .  B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 .  B7 .  .\n"
        "stage 3 | .  .  .  F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7 .  .  .\n");
}

TEST_CASE("timeline cells widen for two-digit micro-batches", "[pipeline_schedule]") {
  CHECK(render_timeline(ScheduleKind::gpipe, 1, 11) ==
        "stage 0 | F0  F1  F2  F3  F4  F5  F6  F7  F8  F9  F10 B0  B1  B2  B3  B4  B5  B6  B7  B8  B9  B10\n");
  CHECK(render_timeline(ScheduleKind::one_f_one_b, 2, 1) ==
        "stage 0 | F0 .  .  B0\n"
        "stage 1 | .  F0 B0 .\n");
}

TEST_CASE("gpipe and 1f1b are valid in both models for 1 to 6 stages and 1 to 10 micro-batches",
          "[pipeline_schedule]") {
  for (ScheduleKind kind : {ScheduleKind::gpipe, ScheduleKind::one_f_one_b}) {
    for (int64_t stages = 1; stages <= 6; ++stages) {
      for (int64_t m = 1; m <= 10; ++m) {
        INFO(to_string(kind) << " stages " << stages << " micro-batches " << m);
        const Schedules per_stage = all_stages(kind, stages, m);
        CHECK(validate_schedules(per_stage, m) == "");
        CHECK(validate_paired_exchange(per_stage, m) == "");
        // Each timeline row lists that stage's actions in order, one cell per slot; with unit F
        // and B both schedules finish in 2 * (m + stages - 1) slots.
        std::istringstream rows(render_timeline(kind, stages, m));
        std::string row;
        for (int64_t s = 0; std::getline(rows, row); ++s) {
          std::vector<std::string> cells;
          std::istringstream in(row.substr(row.find('|') + 1));
          for (std::string cell; in >> cell;) cells.push_back(cell);
          std::string busy;
          for (const auto& cell : cells)
            if (cell != ".") busy += (busy.empty() ? "" : " ") + cell;
          CHECK(busy == joined(per_stage[static_cast<size_t>(s)]));
          CHECK(static_cast<int64_t>(cells.size()) == 2 * (m + stages - 1));
        }
      }
    }
  }
}

TEST_CASE("validate_schedules names the stage and action of a broken list", "[pipeline_schedule]") {
  Schedules ok = all_stages(ScheduleKind::gpipe, 2, 2);
  Schedules s = ok;
  s[1] = parse("F0 F1 B0 B0");
  CHECK(validate_schedules(s, 2) == "stage 1: B0 appears twice (actions 2 and 3)");
  s[1] = parse("F0 F1 B0");
  CHECK(validate_schedules(s, 2) == "stage 1: B1 is missing");
  s[1] = parse("F0 B1 F1 B0");
  CHECK(validate_schedules(s, 2) == "stage 1: action 1 (B1) comes before F1");
  s[1] = parse("F0 F2 B0 B1");
  CHECK(validate_schedules(s, 2) == "stage 1: action 1 (F2): micro-batch out of range 0..1");
  CHECK(validate_paired_exchange(s, 2) == "stage 1: action 1 (F2): micro-batch out of range 0..1");
}

TEST_CASE("a stage that backwards before the next stage can has a deadlock reported", "[pipeline_schedule]") {
  // Stage 1 waits in B0 for stage 2's B0, which waits for F1 that stage 1 only runs after B0.
  const Schedules s = {parse("F0 F1 B0 B1"), parse("F0 B0 F1 B1"), parse("F0 F1 B0 B1")};
  CHECK(validate_schedules(s, 2) ==
        "deadlock: stage 0 waits at action 2 (B0) for B0 of stage 1; stage 1 waits at action 1 (B0) for B0 "
        "of stage 2; stage 2 waits at action 1 (F1) for F1 of stage 1");
  CHECK(validate_paired_exchange(s, 2).rfind("deadlock: ", 0) == 0);
}

TEST_CASE("sends that wait for the peer's receive deadlock where buffered sends do not", "[pipeline_schedule]") {
  // Stage 0 is gpipe; stage 1 keeps F3 until after B2. With buffered sends this finishes. In the
  // paired exchange, stage 0's batch after F3 waits for stage 1 to post the receive of F3's input,
  // which stage 1 posts only after B2; stage 1's batch after B1 waits for stage 0 to post the
  // receive of gradient 1, which stage 0 posts only after B0, behind the stuck batch.
  const Schedules s = {parse("F0 F1 F2 F3 B0 B1 B2 B3"), parse("F0 F1 F2 B0 B1 B2 F3 B3")};
  CHECK(validate_schedules(s, 4) == "");
  CHECK(validate_paired_exchange(s, 4) ==
        "deadlock: stage 0 after action 3 (F3): send activation of micro-batch 3 to stage 1 is never matched; "
        "stage 1 after action 4 (B1): send gradient of micro-batch 1 to stage 0 is never matched");
}

TEST_CASE("the paired exchange rejects stages that disagree on micro-batch order", "[pipeline_schedule]") {
  // Messages between two stages match in posting order, so stage 1's first receive would get
  // micro-batch 1's activation.
  const Schedules s = {parse("F1 F0 B0 B1"), parse("F0 B0 F1 B1")};
  CHECK(validate_schedules(s, 2) == "");
  CHECK(validate_paired_exchange(s, 2) ==
        "stage 1 before action 0 (F0): receive activation of micro-batch 0 from stage 0 is matched by stage 0's "
        "op for micro-batch 1 (ops match in order)");
}

TEST_CASE("bad schedule arguments are usage errors", "[pipeline_schedule]") {
  CHECK_THROWS_AS(make_schedule(ScheduleKind::gpipe, 0, 4, 0), UsageError);
  CHECK_THROWS_WITH(make_schedule(ScheduleKind::gpipe, 0, 4, 0), Catch::Contains("stages must be >= 1, got 0"));
  CHECK_THROWS_WITH(make_schedule(ScheduleKind::one_f_one_b, 4, 0, 0),
                    Catch::Contains("micro_batches must be >= 1, got 0"));
  CHECK_THROWS_WITH(make_schedule(ScheduleKind::one_f_one_b, 4, 8, 4), Catch::Contains("stage 4 out of range 0..3"));
  CHECK_THROWS_WITH(make_schedule(ScheduleKind::one_f_one_b, 4, 8, -1), Catch::Contains("stage -1 out of range 0..3"));
  CHECK_THROWS_WITH(render_timeline(ScheduleKind::gpipe, 0, 1), Catch::Contains("stages must be >= 1"));
  CHECK_THROWS_AS(validate_schedules({}, 4), UsageError);
  CHECK_THROWS_AS(validate_paired_exchange(all_stages(ScheduleKind::gpipe, 2, 2), 0), UsageError);
  CHECK(to_string(ScheduleKind::gpipe) == "gpipe");
  CHECK(to_string(ScheduleKind::one_f_one_b) == "1f1b");
}
