// The schedule's critical path with per-stage times. See Note [Pipeline critical path].
#include "lib/plan/pipeline_time.h"

#include <algorithm>
#include <map>
#include <optional>

#include "lib/util/error.h"

namespace hetu::plan {

using pipeline::PipeAction;
using pipeline::PipeOp;

// Note [Pipeline critical path]: stage s runs its actions in schedule order, one at a time,
// exchanging messages the way the stage executor does (Note [Exchange pairing] in
// lib/pipeline/stage_executor.cpp): after action k it posts one batch holding action k's send
// (F: the activation to stage s+1; B: the input gradient to stage s-1) and the receive of
// action k+1's input, and starts action k+1 when the whole batch is done. The sender pays its
// message's time (send_s of the edge; the gradient is as big as the activation) before it
// posts the batch, as a blocking link and the emulated one (emulated_comm.h) do; a message
// completes once both ends have posted their batches (a rendezvous: nothing is buffered, so
// a fast stage waits for a slow neighbour to take its output). Before its first action a
// stage posts a batch with only that action's receive. With sends free this is the usual
// dependency graph plus the rendezvous. The pipeline time is when the last stage's last batch
// is done. Batches are timed in passes over the stages, each pass timing every batch whose
// partners have posted; a valid schedule (validate_schedules) finishes.
PipelineTime pipeline_time(pipeline::ScheduleKind kind, int64_t micro_batches, const std::vector<StageTimes>& stages) {
  const int64_t n = static_cast<int64_t>(stages.size());
  HT_USAGE_CHECK(n >= 1, "pipeline time: no stages");
  for (const StageTimes& t : stages) {
    HT_USAGE_CHECK(t.forward_s >= 0 && t.backward_s >= 0 && t.send_s >= 0,
                   "pipeline time: negative stage time ({}, {}, {})", t.forward_s, t.backward_s, t.send_s);
  }
  PipelineTime out;
  out.busy_s.assign(static_cast<size_t>(n), 0);
  out.spans.resize(static_cast<size_t>(n));
  HT_USAGE_CHECK(micro_batches >= 1, "pipeline time: {} micro-batches", micro_batches);
  std::vector<std::vector<PipeAction>> lists;
  for (int64_t s = 0; s < n; ++s) lists.push_back(pipeline::make_schedule(kind, n, micro_batches, s));
  // index[s][{op, micro_batch}]: the action's place in stage s's list.
  std::vector<std::map<std::pair<PipeOp, int64_t>, int64_t>> index(static_cast<size_t>(n));
  for (int64_t s = 0; s < n; ++s) {
    const auto& list = lists[static_cast<size_t>(s)];
    for (size_t k = 0; k < list.size(); ++k) index[static_cast<size_t>(s)][{list[k].op, list[k].micro_batch}] = static_cast<int64_t>(k);
  }
  // posted[s][k + 1]: when stage s posted its batch after action k (k = -1: before the first).
  std::vector<std::vector<double>> posted(static_cast<size_t>(n));
  std::vector<double> done_at(static_cast<size_t>(n), 0);  // when the stage's latest batch completed
  // The time stage `peer` posted its batch after its action number `k`, if it has.
  auto post_of = [&](int64_t peer, int64_t k) -> std::optional<double> {
    const auto& p = posted[static_cast<size_t>(peer)];
    if (k + 1 < static_cast<int64_t>(p.size())) return p[static_cast<size_t>(k + 1)];
    return std::nullopt;
  };
  for (int64_t s = 0; s < n; ++s) posted[static_cast<size_t>(s)].push_back(0);
  std::vector<int64_t> next(static_cast<size_t>(n), -1);  // the batch to complete next (after action next)
  bool progressed = true;
  auto finished = [&](int64_t s) { return next[static_cast<size_t>(s)] >= static_cast<int64_t>(lists[static_cast<size_t>(s)].size()); };
  while (progressed) {
    progressed = false;
    for (int64_t s = 0; s < n; ++s) {
      const size_t si = static_cast<size_t>(s);
      const auto& list = lists[si];
      while (!finished(s)) {
        const int64_t k = next[si];
        // The partners of batch k: its send's receiver and its receive's sender.
        double done = posted[si][static_cast<size_t>(k + 1)];
        bool ready = true;
        auto wait_for = [&](int64_t peer, int64_t peer_k) {
          const std::optional<double> t = post_of(peer, peer_k);
          if (t) done = std::max(done, *t); else ready = false;
        };
        if (k >= 0) {
          const PipeAction& a = list[static_cast<size_t>(k)];
          if (a.op == PipeOp::forward && s + 1 < n) wait_for(s + 1, index[si + 1].at({PipeOp::forward, a.micro_batch}) - 1);
          if (a.op == PipeOp::backward && s > 0) wait_for(s - 1, index[si - 1].at({PipeOp::backward, a.micro_batch}) - 1);
        }
        if (k + 1 < static_cast<int64_t>(list.size())) {
          const PipeAction& b = list[static_cast<size_t>(k + 1)];
          if (b.op == PipeOp::forward && s > 0) wait_for(s - 1, index[si - 1].at({PipeOp::forward, b.micro_batch}));
          if (b.op == PipeOp::backward && s + 1 < n) wait_for(s + 1, index[si + 1].at({PipeOp::backward, b.micro_batch}));
        }
        if (!ready) break;
        done_at[si] = done;
        ++next[si];
        progressed = true;
        if (finished(s)) break;
        // Action k + 1 runs, then the stage pays its send and posts the next batch.
        const PipeAction& b = list[static_cast<size_t>(k + 1)];
        const StageTimes& t = stages[si];
        const double duration = b.op == PipeOp::forward ? t.forward_s : t.backward_s;
        out.spans[si].push_back({b, done, done + duration});
        out.busy_s[si] += duration;
        double send = 0;
        if (b.op == PipeOp::forward && s + 1 < n) send = t.send_s;
        if (b.op == PipeOp::backward && s > 0) send = stages[si - 1].send_s;
        posted[si].push_back(done + duration + send);
      }
    }
  }
  for (int64_t s = 0; s < n; ++s) {
    HT_CHECK(finished(s), "pipeline time: the {} schedule of {} stages deadlocks", pipeline::to_string(kind), n);
    out.makespan_s = std::max(out.makespan_s, done_at[static_cast<size_t>(s)]);
  }
  return out;
}

double PipelineTime::bubble(int64_t stage) const {
  if (makespan_s <= 0) return 0;
  return 1 - busy_s.at(static_cast<size_t>(stage)) / makespan_s;
}

int64_t micro_batches_in_flight(pipeline::ScheduleKind kind, int64_t stages, int64_t micro_batches, int64_t stage) {
  int64_t held = 0, most = 0;
  for (const PipeAction& a : pipeline::make_schedule(kind, stages, micro_batches, stage)) {
    held += a.op == PipeOp::forward ? 1 : -1;
    most = std::max(most, held);
  }
  return most;
}

}  // namespace hetu::plan
