// The schedule's critical path with per-stage times. See Note [Pipeline critical path].
#include "lib/plan/pipeline_time.h"

#include <algorithm>
#include <map>

#include "lib/util/error.h"

namespace hetu::plan {

using pipeline::PipeAction;
using pipeline::PipeOp;

// Note [Pipeline critical path]: stage s runs its actions in schedule order, one at a time.
// F(s, m) starts when stage s is free and F(s-1, m) has ended plus the send of stage s-1; B(s, m)
// when stage s is free and B(s+1, m) has ended plus the send of stage s (the gradient is as big
// as the activation); on the last stage B(m) follows its own F(m) through the list order. Sends
// overlap compute (the receiver waits, the sender does not). The step's pipeline time is the
// end of the last action of any stage. Actions are timed in passes over the stages, each pass
// timing every action whose inputs are timed; a valid schedule (validate_schedules) finishes.
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
  std::vector<std::vector<PipeAction>> lists;
  for (int64_t s = 0; s < n; ++s) lists.push_back(pipeline::make_schedule(kind, n, micro_batches, s));
  // end[{stage, op, micro_batch}] once timed.
  std::map<std::tuple<int64_t, PipeOp, int64_t>, double> end;
  std::vector<size_t> next(static_cast<size_t>(n), 0);
  std::vector<double> free_at(static_cast<size_t>(n), 0);
  size_t remaining = 0;
  for (const auto& list : lists) remaining += list.size();
  while (remaining > 0) {
    bool progressed = false;
    for (int64_t s = 0; s < n; ++s) {
      const size_t si = static_cast<size_t>(s);
      while (next[si] < lists[si].size()) {
        const PipeAction a = lists[si][next[si]];
        const StageTimes& t = stages[si];
        double ready = free_at[si];
        if (a.op == PipeOp::forward && s > 0) {
          auto it = end.find({s - 1, PipeOp::forward, a.micro_batch});
          if (it == end.end()) break;
          ready = std::max(ready, it->second + stages[si - 1].send_s);
        }
        if (a.op == PipeOp::backward && s + 1 < n) {
          auto it = end.find({s + 1, PipeOp::backward, a.micro_batch});
          if (it == end.end()) break;
          ready = std::max(ready, it->second + t.send_s);
        }
        const double duration = a.op == PipeOp::forward ? t.forward_s : t.backward_s;
        out.spans[si].push_back({a, ready, ready + duration});
        end[{s, a.op, a.micro_batch}] = ready + duration;
        free_at[si] = ready + duration;
        out.busy_s[si] += duration;
        out.makespan_s = std::max(out.makespan_s, ready + duration);
        ++next[si];
        --remaining;
        progressed = true;
      }
    }
    HT_CHECK(progressed, "pipeline time: the {} schedule of {} stages deadlocks", pipeline::to_string(kind), n);
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
