// Pipeline-parallel (pp) schedules as pure data: the ordered forward/backward actions each stage
// runs, an ASCII timeline of all stages, and two validators that simulate the cross-stage
// dependencies and prove a set of per-stage lists cannot deadlock. No tensors, no communication:
// the executor walks these lists. Every list holds F(m) and B(m) exactly once per micro-batch,
// F(m) before B(m).
//
//   gpipe:  all forwards F0..F(M-1), then all backwards B0..B(M-1) in increasing order (the
//           GPipe paper draws them in decreasing order; the timeline has the same shape, and
//           increasing order sends gradients in the same order as 1F1B).
//   1f1b:   PipeDream-flush, Megatron's non-interleaved schedule: warmup = min(stages - stage - 1, M)
//           forwards, then (F, B) pairs, then the remaining backwards.
//
// Example, 1f1b with 4 stages and 8 micro-batches (warmup 3, 2, 1, 0):
//   stage 1: F0 F1 | F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 | B6 B7
// render_timeline(one_f_one_b, 4, 8) prints, one column per unit of time (F and B each take 1):
//   stage 0 | F0 F1 F2 F3 .  .  .  B0 F4 B1 F5 B2 F6 B3 F7 B4 .  B5 .  B6 .  B7
//   stage 3 | .  .  .  F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7 .  .  .
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hetu::pipeline {

enum class ScheduleKind { gpipe, one_f_one_b };
enum class PipeOp : uint8_t { forward, backward };

struct PipeAction {
  PipeOp op;
  int64_t micro_batch;
  bool operator==(const PipeAction&) const = default;
};

// The ordered compute actions of `stage`. Throws hetu::UsageError unless stages >= 1,
// micro_batches >= 1 and 0 <= stage < stages.
std::vector<PipeAction> make_schedule(ScheduleKind kind, int64_t stages, int64_t micro_batches, int64_t stage);

// One row per stage ("stage 0 | F0 F1 .  B0"), one column per time slot (every row has all of
// them), each row ending in '\n' with trailing blanks removed. Cells are "F<m>" / "B<m>" or "."
// for idle, padded to the widest label. Simulated with forward and backward both taking one
// unit (a real backward takes about two); an action starts in the first slot after its inputs
// are done: F(s,m) after F(s-1,m), B(s,m) after B(s+1,m), both after the stage's previous action.
std::string render_timeline(ScheduleKind kind, int64_t stages, int64_t micro_batches);

// Checks per_stage (one list per stage) against the compute model: every micro-batch forwarded and
// backwarded exactly once per stage, B after F, and the stages, each running its list in order
// with buffered sends and blocking receives, all finish. Returns "" when valid, else a message
// naming the stage and the action. Throws hetu::UsageError on no stages or micro_batches < 1.
std::string validate_schedules(const std::vector<std::vector<PipeAction>>& per_stage, int64_t micro_batches);

// Checks per_stage against the executor's exchange model (Megatron's send_forward_recv_backward):
// before its first action a stage posts a batch holding that action's receive, if any; after
// each action it posts ONE batch = {send of the action's output (F: activation to stage + 1
// unless last; B: gradient to stage - 1 unless first), receive of the next action's input (F on
// stage > 0: activation from stage - 1; B on stage < last: gradient from stage + 1)}, and waits
// until every op in it is matched by an op in a batch the peer has posted. Between two stages,
// sends and receives of one direction match in posting order, and must carry the same
// micro-batch. Returns "" when every stage finishes, else a message naming the stage and action.
std::string validate_paired_exchange(const std::vector<std::vector<PipeAction>>& per_stage, int64_t micro_batches);

std::string to_string(ScheduleKind kind);     // "gpipe", "1f1b"
std::string to_string(const PipeAction& a);   // "F3", "B0"

}  // namespace hetu::pipeline
