// The schedule's critical path with per-stage times. See Note [Pipeline critical path].
#include "lib/plan/pipeline_time.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "lib/util/error.h"

namespace hetu::plan {

using pipeline::PipeAction;
using pipeline::PipeOp;

// Note [Pipeline critical path]: stage s runs its actions in schedule order, one at a time,
// with the executor's paired exchange (stage_executor.h, validate_paired_exchange): before its
// first action a stage posts a batch with that action's receive; after each action one batch
// with the action's send (F: the activation to s+1; B: its gradient, as big, to s-1) and the
// next action's receive, and it waits for the whole batch. A message moves once both its
// send and its receive are posted, taking the edge's send_s (of stage s for the s <-> s+1
// edge, both ways); a batch ends when all its messages have arrived (at once when empty), and
// the next action starts then. So a sender waits for its receiver, as the executor's blocking
// batches do. The step's pipeline time is the end of the last action of any stage. Stages are
// timed in passes, each going as far as its peers' posts allow; a schedule that passes
// validate_paired_exchange finishes.
namespace {

enum class Flow : uint8_t { activation, gradient };
using MessageKey = std::tuple<Flow, int64_t, int64_t>;  // (flow, sending stage, micro-batch)

struct Message {
  MessageKey key;
  bool send = false;
  int64_t edge = 0;  // the lower stage of the two
};

// The messages of stage s's batch `i` (before action i; i == list size: after the last).
std::vector<Message> batch(const std::vector<PipeAction>& list, size_t i, int64_t s, int64_t n) {
  std::vector<Message> out;
  if (i > 0) {
    const PipeAction& done = list[i - 1];
    if (done.op == PipeOp::forward && s + 1 < n) out.push_back({{Flow::activation, s, done.micro_batch}, true, s});
    if (done.op == PipeOp::backward && s > 0) out.push_back({{Flow::gradient, s, done.micro_batch}, true, s - 1});
  }
  if (i < list.size()) {
    const PipeAction& next = list[i];
    if (next.op == PipeOp::forward && s > 0) out.push_back({{Flow::activation, s - 1, next.micro_batch}, false, s - 1});
    if (next.op == PipeOp::backward && s + 1 < n) out.push_back({{Flow::gradient, s + 1, next.micro_batch}, false, s});
  }
  return out;
}

}  // namespace

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
  std::map<MessageKey, double> sent, received;  // when each side was posted
  std::vector<size_t> next(static_cast<size_t>(n), 0);  // the batch each stage is at
  std::vector<double> ready(static_cast<size_t>(n), 0);  // when it posts that batch
  std::vector<bool> posted(static_cast<size_t>(n), false);
  size_t remaining = 0;
  for (const auto& list : lists) remaining += list.size() + 1;
  while (remaining > 0) {
    bool progressed = false;
    for (int64_t s = 0; s < n; ++s) {
      const size_t si = static_cast<size_t>(s);
      while (next[si] <= lists[si].size()) {
        const std::vector<Message> messages = batch(lists[si], next[si], s, n);
        if (!posted[si]) {
          for (const Message& m : messages) (m.send ? sent : received)[m.key] = ready[si];
          posted[si] = true;
        }
        double end = ready[si];
        bool complete = true;
        for (const Message& m : messages) {
          auto from = sent.find(m.key), to = received.find(m.key);
          if (from == sent.end() || to == received.end()) {
            complete = false;
            break;
          }
          end = std::max(end, std::max(from->second, to->second) + stages[static_cast<size_t>(m.edge)].send_s);
        }
        if (!complete) break;
        if (next[si] < lists[si].size()) {
          const PipeAction a = lists[si][next[si]];
          const double duration = a.op == PipeOp::forward ? stages[si].forward_s : stages[si].backward_s;
          out.spans[si].push_back({a, end, end + duration});
          out.busy_s[si] += duration;
          out.makespan_s = std::max(out.makespan_s, end + duration);
          end += duration;
        }
        ready[si] = end;
        posted[si] = false;
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
