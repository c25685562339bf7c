// Step timer: scoped timers that sort a rank's wall time into phases (forward, backward,
// pipeline waits, collectives, optimizer, data, checkpoint, eval) and, while tracing is on,
// record each named scope as a trace event on a compute or a communication track. It lives
// in lib/util so that every layer (the communicator in hspmd, the stage executor in
// pipeline, the Trainer in runtime) can place a scope at a call site; like the logger it is
// a singleton, one recorder per thread, so no layer threads a pointer through its API.
// See Note [Phase attribution] for how nested scopes are counted.
//
//   { timing::Scope s(timing::Phase::forward, "forward"); out = model(x); }  // timed, traced
//   timing::Totals t = timing::take_totals();  // exclusive seconds per phase since the last take
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hetu::timing {

// The phases a step's time is sorted into; `comm` is not one of them but asks for the phase
// of a collective (Note [Phase attribution]).
enum class Phase : uint8_t { forward, backward, pipe_wait, tp_comm, grad_sync, optimizer, data, checkpoint, eval, other, comm };
constexpr int kNumPhases = 10;  // forward .. other
std::string_view phase_name(Phase phase);

enum class Track : uint8_t { compute = 0, comm = 1 };

struct Totals {
  std::array<double, kNumPhases> seconds{};  // exclusive time per phase (other: nothing timed)
  double wall = 0;                           // seconds since the previous take_totals()
};

struct TraceEvent {
  std::string name;
  Track track = Track::compute;
  int64_t step = 0;      // the step set by set_step() when the scope opened
  double start_us = 0;   // microseconds since the Unix epoch (system clock at start + steady time)
  double duration_us = 0;
  std::string args;      // a JSON object's members without braces, e.g. "\"mb\":3,\"bytes\":128"
};

// Timing is on unless HETU_TIMING=0 (which makes every scope a no-op, to measure the overhead).
bool enabled();
void set_enabled(bool on);
// Trace events are kept only while tracing is on (see lib/runtime/step_telemetry.h).
bool tracing();
void set_tracing(bool on);
// The step number stamped on trace events (and named when a communication times out).
void set_step(int64_t step);
int64_t current_step();
// For tests only: every forward scope of this thread sleeps this long inside it (a slow stage).
void set_forward_delay(double seconds);

// This thread's exclusive seconds per phase and wall time since the previous call, then reset.
Totals take_totals();
// This thread's trace events since the previous call, in the order they closed.
std::vector<TraceEvent> take_events();

class Scope {
 public:
  using Args = std::initializer_list<std::pair<const char*, int64_t>>;
  explicit Scope(Phase phase) : Scope(phase, nullptr, Track::compute, {}) {}
  // A named scope is also a trace event (when tracing) on `track`, with integer `args`.
  Scope(Phase phase, const char* name, Track track = Track::compute, Args args = {});
  ~Scope() { end(); }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  // True when this scope becomes a trace event: worth building set_args() text for.
  bool traced() const { return traced_; }
  // Replaces the event's args (JSON members without braces).
  void set_args(std::string args);
  // Ends the scope before its destructor (idempotent).
  void end();

 private:
  bool open_ = false;
  bool traced_ = false;
};

// Parses a step range "20-22" or "7" (1-based, inclusive): {first, last}; throws
// hetu::UsageError naming `key` on anything else. "" means no range: {0, -1}.
std::pair<int64_t, int64_t> parse_step_range(std::string_view text, std::string_view key);

}  // namespace hetu::timing
