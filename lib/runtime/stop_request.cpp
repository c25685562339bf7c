// Stop requests: the signal handler and the flag it sets. See lib/runtime/stop_request.h.
#include "lib/runtime/stop_request.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>

#include "lib/util/error.h"

namespace hetu::runtime {
namespace {

// Note [Stopping under Slurm]: a batch job has a time limit; at the limit Slurm sends
// SIGTERM and, KillWait seconds later (30 s by default), SIGKILL: rarely enough time to
// finish a step and write a checkpoint. `#SBATCH --signal=USR1@120` asks for SIGUSR1 about
// two minutes before the limit instead, delivered to every task of the job's steps (with
// `B:` it would go to the batch shell only, and hetu would never see it). hetu then
// finishes the current optimizer step, all ranks agree to stop, the checkpoint is saved, and
// every rank exits 0. SIGTERM (scancel, preemption, the limit itself) takes the same path,
// and succeeds when the step and the save fit in KillWait. A job submitted with `--requeue`
// can be put back in the queue and run its batch script again: scripts/slurm/train.sbatch
// requeues itself after a clean stop short of the last step, and sites requeue on node
// failure or preemption; `checkpoint.resume = "auto"` then continues from
// out_dir/checkpoints/latest bit for bit. Only one value is stored, and only from the
// handler: a lock-free std::atomic<int> is async-signal-safe (C++17 [support.signal]).
static_assert(std::atomic<int>::is_always_lock_free, "the stop flag must be lock-free to be set from a signal handler");
std::atomic<int> g_stop_signal{0};

void record_stop_signal(int signal) {
  int none = 0;
  g_stop_signal.compare_exchange_strong(none, signal, std::memory_order_relaxed);
}

void install(int signal) {
  struct sigaction action;
  std::memset(&action, 0, sizeof(action));
  action.sa_handler = record_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  HT_CHECK(sigaction(signal, &action, nullptr) == 0, "sigaction({}) failed: {}", stop_signal_name(signal),
           std::strerror(errno));
}

}  // namespace

void install_stop_handlers() {
  install(SIGTERM);
  install(SIGUSR1);
}

bool stop_requested() { return g_stop_signal.load(std::memory_order_relaxed) != 0; }

int stop_signal() { return g_stop_signal.load(std::memory_order_relaxed); }

std::string stop_signal_name(int signal) {
  switch (signal) {
    case SIGTERM: return "SIGTERM";
    case SIGUSR1: return "SIGUSR1";
    default: return "signal " + std::to_string(signal);
  }
}

void clear_stop_request() { g_stop_signal.store(0, std::memory_order_relaxed); }

}  // namespace hetu::runtime
