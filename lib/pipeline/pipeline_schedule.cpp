// Pipeline schedules: the per-stage action lists (gpipe, 1f1b), a unit-time simulation of the
// compute dependencies (drives render_timeline and validate_schedules), and a simulation of the
// executor's paired send/receive batches (validate_paired_exchange). See pipeline_schedule.h.
#include "lib/pipeline/pipeline_schedule.h"

#include <fmt/core.h>

#include <algorithm>

#include "lib/util/error.h"

namespace hetu::pipeline {

namespace {

PipeAction F(int64_t m) { return {PipeOp::forward, m}; }
PipeAction B(int64_t m) { return {PipeOp::backward, m}; }

// Every micro-batch forwarded and backwarded exactly once, F before B; "" when so.
std::string check_stage(const std::vector<PipeAction>& actions, int64_t micro_batches, int64_t stage) {
  std::vector<int64_t> f_at(static_cast<size_t>(micro_batches), -1), b_at(f_at);
  for (size_t i = 0; i < actions.size(); ++i) {
    const PipeAction& a = actions[i];
    if (a.micro_batch < 0 || a.micro_batch >= micro_batches)
      return fmt::format("stage {}: action {} ({}): micro-batch out of range 0..{}", stage, i, to_string(a),
                         micro_batches - 1);
    std::vector<int64_t>& at = a.op == PipeOp::forward ? f_at : b_at;
    int64_t& seen = at[static_cast<size_t>(a.micro_batch)];
    if (seen >= 0) return fmt::format("stage {}: {} appears twice (actions {} and {})", stage, to_string(a), seen, i);
    seen = static_cast<int64_t>(i);
    if (a.op == PipeOp::backward && f_at[static_cast<size_t>(a.micro_batch)] < 0)
      return fmt::format("stage {}: action {} ({}) comes before F{}", stage, i, to_string(a), a.micro_batch);
  }
  for (int64_t m = 0; m < micro_batches; ++m) {
    if (f_at[static_cast<size_t>(m)] < 0) return fmt::format("stage {}: F{} is missing", stage, m);
    if (b_at[static_cast<size_t>(m)] < 0) return fmt::format("stage {}: B{} is missing", stage, m);
  }
  return "";
}

std::string check_all_stages(const std::vector<std::vector<PipeAction>>& per_stage, int64_t micro_batches) {
  HT_USAGE_CHECK(!per_stage.empty(), "pipeline schedule: no stages given");
  HT_USAGE_CHECK(micro_batches >= 1, "pipeline schedule: micro_batches must be >= 1, got {}", micro_batches);
  for (size_t s = 0; s < per_stage.size(); ++s) {
    std::string problem = check_stage(per_stage[s], micro_batches, static_cast<int64_t>(s));
    if (!problem.empty()) return problem;
  }
  return "";
}

// The compute model: slot[s][i] is when stage s runs its action i, every action one unit long.
// Assumes check_all_stages passed. `deadlock` names every stuck stage when the stages cannot finish.
struct Simulation {
  std::vector<std::vector<int64_t>> slot;
  int64_t slots = 0;
  std::string deadlock;
};

Simulation simulate(const std::vector<std::vector<PipeAction>>& per_stage, int64_t micro_batches) {
  const auto stages = static_cast<int64_t>(per_stage.size());
  const auto M = static_cast<size_t>(micro_batches);
  // done[s][op][m]: the slot F/B(m) ran in on stage s, -1 while pending.
  std::vector<std::vector<std::vector<int64_t>>> done(
      static_cast<size_t>(stages), std::vector<std::vector<int64_t>>(2, std::vector<int64_t>(M, -1)));
  auto done_at = [&](int64_t s, PipeOp op, int64_t m) -> int64_t& {
    return done[static_cast<size_t>(s)][static_cast<size_t>(op)][static_cast<size_t>(m)];
  };
  // The stage whose output the action waits for, or -1 when it has no cross-stage input.
  auto producer = [&](int64_t s, const PipeAction& a) -> int64_t {
    if (a.op == PipeOp::forward) return s > 0 ? s - 1 : -1;
    return s < stages - 1 ? s + 1 : -1;
  };
  Simulation sim;
  sim.slot.resize(per_stage.size());
  std::vector<size_t> next(per_stage.size(), 0);
  size_t remaining = 0;
  for (const auto& actions : per_stage) remaining += actions.size();
  for (int64_t t = 0; remaining > 0; ++t) {
    bool progressed = false;
    for (int64_t s = 0; s < stages; ++s) {
      const auto& actions = per_stage[static_cast<size_t>(s)];
      size_t& i = next[static_cast<size_t>(s)];
      if (i == actions.size()) continue;
      const PipeAction& a = actions[i];
      const int64_t p = producer(s, a);
      if (p >= 0) {
        const int64_t input = done_at(p, a.op, a.micro_batch);
        if (input < 0 || input >= t) continue;  // not done, or done in this very slot
      }
      done_at(s, a.op, a.micro_batch) = t;
      sim.slot[static_cast<size_t>(s)].push_back(t);
      ++i, --remaining, progressed = true;
    }
    sim.slots = t + 1;
    if (progressed) continue;
    // Nothing ran in slot t, so nothing can run later either.
    std::vector<std::string> stuck;
    for (int64_t s = 0; s < stages; ++s) {
      const size_t i = next[static_cast<size_t>(s)];
      if (i == per_stage[static_cast<size_t>(s)].size()) continue;
      const PipeAction& a = per_stage[static_cast<size_t>(s)][i];
      stuck.push_back(fmt::format("stage {} waits at action {} ({}) for {} of stage {}", s, i, to_string(a),
                                  to_string(a), producer(s, a)));
    }
    std::string joined;
    for (const auto& line : stuck) joined += (joined.empty() ? "" : "; ") + line;
    sim.deadlock = "deadlock: " + joined;
    return sim;
  }
  return sim;
}

void check_shape(int64_t stages, int64_t micro_batches) {
  HT_USAGE_CHECK(stages >= 1, "pipeline schedule: stages must be >= 1, got {}", stages);
  HT_USAGE_CHECK(micro_batches >= 1, "pipeline schedule: micro_batches must be >= 1, got {}", micro_batches);
}

}  // namespace

std::vector<PipeAction> make_schedule(ScheduleKind kind, int64_t stages, int64_t micro_batches, int64_t stage) {
  check_shape(stages, micro_batches);
  HT_USAGE_CHECK(stage >= 0 && stage < stages, "pipeline schedule: stage {} out of range 0..{}", stage, stages - 1);
  std::vector<PipeAction> out;
  out.reserve(static_cast<size_t>(2 * micro_batches));
  if (kind == ScheduleKind::gpipe) {
    for (int64_t m = 0; m < micro_batches; ++m) out.push_back(F(m));
    for (int64_t m = 0; m < micro_batches; ++m) out.push_back(B(m));
    return out;
  }
  const int64_t warmup = std::min(stages - stage - 1, micro_batches);
  for (int64_t m = 0; m < warmup; ++m) out.push_back(F(m));
  for (int64_t m = 0; m < micro_batches - warmup; ++m) {
    out.push_back(F(warmup + m));
    out.push_back(B(m));
  }
  for (int64_t m = micro_batches - warmup; m < micro_batches; ++m) out.push_back(B(m));
  return out;
}

std::string render_timeline(ScheduleKind kind, int64_t stages, int64_t micro_batches) {
  check_shape(stages, micro_batches);
  std::vector<std::vector<PipeAction>> per_stage;
  for (int64_t s = 0; s < stages; ++s) per_stage.push_back(make_schedule(kind, stages, micro_batches, s));
  const Simulation sim = simulate(per_stage, micro_batches);
  HT_CHECK(sim.deadlock.empty(), "render_timeline({}): {}", to_string(kind), sim.deadlock);
  const size_t width = to_string(B(micro_batches - 1)).size();
  const size_t stage_width = std::to_string(stages - 1).size();
  std::string out;
  for (int64_t s = 0; s < stages; ++s) {
    std::vector<std::string> cells(static_cast<size_t>(sim.slots), ".");
    const auto& actions = per_stage[static_cast<size_t>(s)];
    for (size_t i = 0; i < actions.size(); ++i)
      cells[static_cast<size_t>(sim.slot[static_cast<size_t>(s)][i])] = to_string(actions[i]);
    std::string row = fmt::format("stage {:<{}} |", s, stage_width);
    for (const auto& cell : cells) row += fmt::format(" {:<{}}", cell, width);
    row.erase(row.find_last_not_of(' ') + 1);
    out += row + "\n";
  }
  return out;
}

std::string validate_schedules(const std::vector<std::vector<PipeAction>>& per_stage, int64_t micro_batches) {
  std::string problem = check_all_stages(per_stage, micro_batches);
  if (!problem.empty()) return problem;
  return simulate(per_stage, micro_batches).deadlock;
}

std::string validate_paired_exchange(const std::vector<std::vector<PipeAction>>& per_stage, int64_t micro_batches) {
  std::string problem = check_all_stages(per_stage, micro_batches);
  if (!problem.empty()) return problem;
  const auto stages = static_cast<int64_t>(per_stage.size());
  // Channel 2*s carries activations s -> s+1, channel 2*s+1 gradients s+1 -> s. posted[c][side]
  // lists the micro-batches of the sends (side 0) and receives (side 1) posted so far, in order.
  struct Op {
    int64_t channel, side, seq, micro_batch, peer;
  };
  std::vector<std::vector<std::vector<int64_t>>> posted(static_cast<size_t>(2 * std::max<int64_t>(stages - 1, 0)),
                                                        std::vector<std::vector<int64_t>>(2));
  auto post = [&](std::vector<Op>& batch, int64_t channel, int64_t side, int64_t m, int64_t peer) {
    auto& list = posted[static_cast<size_t>(channel)][static_cast<size_t>(side)];
    batch.push_back({channel, side, static_cast<int64_t>(list.size()), m, peer});
    list.push_back(m);
  };
  // Posts batch k of stage s: {send of action k-1's output, receive of action k's input}.
  auto post_batch = [&](int64_t s, size_t k) {
    const auto& actions = per_stage[static_cast<size_t>(s)];
    std::vector<Op> batch;
    if (k > 0) {
      const PipeAction& a = actions[k - 1];
      if (a.op == PipeOp::forward && s < stages - 1) post(batch, 2 * s, 0, a.micro_batch, s + 1);
      if (a.op == PipeOp::backward && s > 0) post(batch, 2 * (s - 1) + 1, 0, a.micro_batch, s - 1);
    }
    if (k < actions.size()) {
      const PipeAction& a = actions[k];
      if (a.op == PipeOp::forward && s > 0) post(batch, 2 * (s - 1), 1, a.micro_batch, s - 1);
      if (a.op == PipeOp::backward && s < stages - 1) post(batch, 2 * s + 1, 1, a.micro_batch, s + 1);
    }
    return batch;
  };
  auto describe = [&](int64_t s, size_t k) {
    const auto& actions = per_stage[static_cast<size_t>(s)];
    if (k == 0) return fmt::format("before action 0 ({})", to_string(actions[0]));
    return fmt::format("after action {} ({})", k - 1, to_string(actions[k - 1]));
  };
  auto name = [](const Op& op) {
    const char* what = op.channel % 2 == 0 ? "activation" : "gradient";
    return fmt::format("{} {} of micro-batch {} {} stage {}", op.side == 0 ? "send" : "receive", what,
                       op.micro_batch, op.side == 0 ? "to" : "from", op.peer);
  };
  std::vector<size_t> k(per_stage.size(), 0);  // the batch each stage has posted and waits on
  std::vector<std::vector<Op>> waiting;
  for (int64_t s = 0; s < stages; ++s) waiting.push_back(post_batch(s, 0));
  std::vector<bool> finished(per_stage.size(), false);
  for (bool progressed = true; progressed;) {
    progressed = false;
    for (int64_t s = 0; s < stages; ++s) {
      const auto us = static_cast<size_t>(s);
      if (finished[us]) continue;
      bool complete = true;
      for (const Op& op : waiting[us]) {
        const auto& other = posted[static_cast<size_t>(op.channel)][static_cast<size_t>(1 - op.side)];
        if (static_cast<int64_t>(other.size()) <= op.seq) {
          complete = false;
          continue;
        }
        const int64_t got = other[static_cast<size_t>(op.seq)];
        if (got != op.micro_batch)
          return fmt::format("stage {} {}: {} is matched by stage {}'s op for micro-batch {} (ops match in order)", s,
                             describe(s, k[us]), name(op), op.peer, got);
      }
      if (!complete) continue;
      progressed = true;
      if (k[us] == per_stage[us].size()) {
        finished[us] = true;
        continue;
      }
      waiting[us] = post_batch(s, ++k[us]);  // action k ran; post the exchange that follows it
    }
  }
  std::string stuck;
  for (int64_t s = 0; s < stages; ++s) {
    const auto us = static_cast<size_t>(s);
    if (finished[us]) continue;
    for (const Op& op : waiting[us]) {
      const auto& other = posted[static_cast<size_t>(op.channel)][static_cast<size_t>(1 - op.side)];
      if (static_cast<int64_t>(other.size()) > op.seq) continue;
      stuck += fmt::format("{}stage {} {}: {} is never matched", stuck.empty() ? "" : "; ", s, describe(s, k[us]),
                           name(op));
    }
  }
  return stuck.empty() ? "" : "deadlock: " + stuck;
}

std::string to_string(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::gpipe: return "gpipe";
    case ScheduleKind::one_f_one_b: return "1f1b";
  }
  HT_THROW("unknown ScheduleKind {}", static_cast<int>(kind));
}

std::string to_string(const PipeAction& a) {
  return fmt::format("{}{}", a.op == PipeOp::forward ? 'F' : 'B', a.micro_batch);
}

}  // namespace hetu::pipeline
