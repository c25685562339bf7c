// An opt-in trace of where the ranks of a job wait: HETU_WAIT_TRACE=DIR makes every process
// write DIR/wait.RANK.PID.txt (RANK: OMPI_COMM_WORLD_RANK, "x" outside mpirun), one line per
// MPI wait (every blocking communication goes through mpi_wait_all) and per marked span
// (a profile pass and its pieces, a training micro-batch's forward and backward), on the
// machine's monotonic clock, so the ranks' lines line up. scripts/bench/tp_wait_trace.py reads
// them: per tp-2 micro-batch of `hetu profile` and of `hetu train`, each rank's wall time, time
// in collectives, both ranks' skew, thread CPU time and faults. Unset: no file, no output.
//
//   W OP ENTER_S EXIT_S                                  a wait of operation OP
//   M NAME begin|end A B WALL_S CPU_S MINFLT NIVCSW      a span's edge (A, B: the caller's labels)
//
//   wait_trace::Span span("pass", tp, micro_batch);  // begin now, end when it goes out of scope
#pragma once

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace hetu::wait_trace {

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// This process's trace file, opened at the first use; nullptr when HETU_WAIT_TRACE is unset.
inline FILE* file() {
  static FILE* const f = [] {
    const char* dir = std::getenv("HETU_WAIT_TRACE");
    if (dir == nullptr || *dir == '\0') return static_cast<FILE*>(nullptr);
    const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
    const std::string path = std::string(dir) + "/wait." + (rank != nullptr ? rank : "x") + "." +
                             std::to_string(getpid()) + ".txt";
    return std::fopen(path.c_str(), "w");
  }();
  return f;
}

inline bool enabled() { return file() != nullptr; }

inline void wait(const char* op, double enter_s, double exit_s) {
  if (FILE* f = file()) std::fprintf(f, "W %s %.9f %.9f\n", op, enter_s, exit_s);
}

inline void edge(const char* name, const char* which, long a, long b) {
  FILE* f = file();
  if (f == nullptr) return;
  timespec cpu{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  std::fprintf(f, "M %s %s %ld %ld %.9f %.9f %ld %ld\n", name, which, a, b, now_s(),
               static_cast<double>(cpu.tv_sec) + 1e-9 * static_cast<double>(cpu.tv_nsec), usage.ru_minflt,
               usage.ru_nivcsw);
}

// A marked span: its begin edge at construction, its end edge at destruction.
class Span {
 public:
  Span(const char* name, long a = 0, long b = 0) : name_(name), a_(a), b_(b) { edge(name_, "begin", a_, b_); }
  ~Span() { edge(name_, "end", a_, b_); }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

 private:
  const char* name_;
  long a_, b_;
};

}  // namespace hetu::wait_trace
