// The step timer's per-thread stack of open scopes. See Note [Phase attribution].
#include "lib/util/step_timer.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "lib/util/error.h"

namespace hetu::timing {
namespace {

using Clock = std::chrono::steady_clock;

// Note [Phase attribution]: a scope's time is its own minus that of the scopes opened inside
// it (exclusive time), so the phases of a step never count a second twice and, with `other`
// (the time no scope covered), sum to the wall time. The phase a scope counts in:
//  - inside eval or checkpoint: that phase (an evaluation's forwards are eval time);
//  - Phase::comm (a collective or a send/recv batch): tp_comm inside forward or backward,
//    pipe_wait inside a pipeline exchange, grad_sync anywhere else (the gradient sync, and
//    the step's small reductions of loss, norm and stop flag, where ranks wait for each other);
//  - otherwise the phase it names.
// A named scope is a trace event on its track unless an enclosing scope on the same track
// already is one, so events on one track never overlap.
struct Frame {
  Phase phase;
  Track track;
  bool emits;
  Clock::time_point start;
  double child_seconds;
  const char* name;
  std::string args;
  int64_t step;
};

struct ThreadState {
  std::vector<Frame> stack;
  Totals totals;
  Clock::time_point window_start = Clock::now();
  std::vector<TraceEvent> events;
  int emitting[2] = {0, 0};
  double forward_delay = 0;
};

thread_local ThreadState t_state;

bool enabled_from_env() {
  const char* v = std::getenv("HETU_TIMING");
  return v == nullptr || std::strcmp(v, "0") != 0;
}

std::atomic<bool> g_enabled{enabled_from_env()};
std::atomic<bool> g_tracing{false};
std::atomic<int64_t> g_step{0};

Phase resolve(Phase requested, const Frame* parent) {
  if (parent != nullptr && (parent->phase == Phase::eval || parent->phase == Phase::checkpoint)) return parent->phase;
  if (requested != Phase::comm) return requested;
  if (parent == nullptr) return Phase::grad_sync;
  switch (parent->phase) {
    case Phase::forward:
    case Phase::backward:
    case Phase::tp_comm: return Phase::tp_comm;
    case Phase::pipe_wait: return Phase::pipe_wait;
    default: return Phase::grad_sync;
  }
}

// Microseconds since the Unix epoch of a steady-clock time: one wall-clock reading at the
// first use, steady time after it (ranks on one machine share both clocks).
double epoch_us(Clock::time_point t) {
  static const auto steady0 = Clock::now();
  static const double epoch0_us =
      std::chrono::duration<double, std::micro>(std::chrono::system_clock::now().time_since_epoch()).count();
  return epoch0_us + std::chrono::duration<double, std::micro>(t - steady0).count();
}

}  // namespace

std::string_view phase_name(Phase phase) {
  switch (phase) {
    case Phase::forward: return "forward";
    case Phase::backward: return "backward";
    case Phase::pipe_wait: return "pipe_wait";
    case Phase::tp_comm: return "tp_comm";
    case Phase::grad_sync: return "grad_sync";
    case Phase::optimizer: return "optimizer";
    case Phase::data: return "data";
    case Phase::checkpoint: return "checkpoint";
    case Phase::eval: return "eval";
    case Phase::other: return "other";
    case Phase::comm: return "comm";
  }
  return "?";
}

bool enabled() { return g_enabled.load(std::memory_order_relaxed); }
void set_enabled(bool on) { g_enabled.store(on); }
bool tracing() { return g_tracing.load(std::memory_order_relaxed); }
void set_tracing(bool on) { g_tracing.store(on); }
void set_step(int64_t step) { g_step.store(step); }
int64_t current_step() { return g_step.load(); }
void set_forward_delay(double seconds) { t_state.forward_delay = seconds; }

Totals take_totals() {
  ThreadState& s = t_state;
  const auto now = Clock::now();
  Totals out = s.totals;
  out.wall = std::chrono::duration<double>(now - s.window_start).count();
  double timed = 0;
  for (int i = 0; i < kNumPhases; ++i) timed += out.seconds[static_cast<size_t>(i)];
  out.seconds[static_cast<size_t>(Phase::other)] = std::max(0.0, out.wall - timed);
  s.totals = Totals{};
  s.window_start = now;
  return out;
}

std::vector<TraceEvent> take_events() {
  std::vector<TraceEvent> out;
  out.swap(t_state.events);
  return out;
}

Scope::Scope(Phase phase, const char* name, Track track, Args args) {
  if (!enabled()) return;
  ThreadState& s = t_state;
  const Frame* parent = s.stack.empty() ? nullptr : &s.stack.back();
  const Phase resolved = resolve(phase, parent);
  const int t = static_cast<int>(track);
  const bool emits = name != nullptr && tracing() && s.emitting[t] == 0;
  std::string text;
  if (emits) {
    for (const auto& [key, value] : args) text += fmt::format("{}\"{}\":{}", text.empty() ? "" : ",", key, value);
  }
  s.stack.push_back({resolved, track, emits, Clock::now(), 0.0, name, std::move(text), g_step.load()});
  s.emitting[t] += emits ? 1 : 0;
  open_ = true;
  traced_ = emits;
  if (phase == Phase::forward && resolved == Phase::forward && s.forward_delay > 0) {
    std::this_thread::sleep_for(std::chrono::duration<double>(s.forward_delay));
  }
}

void Scope::set_args(std::string args) {
  if (open_ && traced_) t_state.stack.back().args = std::move(args);
}

void Scope::end() {
  if (!open_) return;
  open_ = false;
  ThreadState& s = t_state;
  Frame f = std::move(s.stack.back());
  s.stack.pop_back();
  const auto now = Clock::now();
  const double elapsed = std::chrono::duration<double>(now - f.start).count();
  s.totals.seconds[static_cast<size_t>(f.phase)] += elapsed - f.child_seconds;
  if (!s.stack.empty()) s.stack.back().child_seconds += elapsed;
  if (f.emits) {
    --s.emitting[static_cast<int>(f.track)];
    s.events.push_back({f.name, f.track, f.step, epoch_us(f.start), elapsed * 1e6, std::move(f.args)});
  }
}

std::pair<int64_t, int64_t> parse_step_range(std::string_view text, std::string_view key) {
  if (text.empty()) return {0, -1};
  auto number = [&](std::string_view part) {
    int64_t v = 0;
    bool ok = !part.empty() && part.size() < 18;
    for (char c : part) {
      ok = ok && c >= '0' && c <= '9';
      v = v * 10 + (c - '0');
    }
    if (!ok || v < 1) {
      HT_USAGE_ERROR("{}: expected a step range such as \"20-22\" or \"7\" (steps from 1), got \"{}\"", key, text);
    }
    return v;
  };
  const size_t dash = text.find('-');
  const int64_t first = number(text.substr(0, dash));
  const int64_t last = dash == std::string_view::npos ? first : number(text.substr(dash + 1));
  if (last < first) HT_USAGE_ERROR("{}: the range \"{}\" ends before it starts", key, text);
  return {first, last};
}

}  // namespace hetu::timing
