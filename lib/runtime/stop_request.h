// Stop requests: SIGTERM and SIGUSR1 handlers that only record the signal in a lock-free
// atomic, so a run can finish its optimizer step, save a checkpoint and exit 0 instead of
// dying mid-step. The handler does nothing else (async-signal-safe); the trainer polls.
//
// Why these two signals (see Note [Stopping under Slurm]):
//   - SIGUSR1: `#SBATCH --signal=USR1@120` makes Slurm send SIGUSR1 to every task of the
//     job's steps about 120 s before the time limit (give or take slurmctld's polling, up to
//     a minute). `scancel --signal=USR1 JOBID` sends it by hand.
//   - SIGTERM: what `scancel`, preemption and the time limit itself send first; SIGKILL
//     follows KillWait seconds later (30 s by default), so there is little time for a save.
// Under mpirun (Open MPI 4.1), `kill -USR1 <mpirun pid>` reaches every rank and mpirun exits
// 0; SIGTERM reaches them too, but mpirun itself then exits 1.
//
// Worked example (the trainer's side):
//   install_stop_handlers();                       // once, after MPI is initialised
//   for (step...) {
//     ... optimizer step ...
//     if (all_reduce_max(stop_requested())) {     // every rank agrees: one collective
//       save checkpoint;
//       log("stopping on {} after step {}", stop_signal_name(stop_signal()), step);
//       return 0;                                  // exit 0; requeue resumes from latest
//     }
//   }
#pragma once

#include <string>

namespace hetu::runtime {

// Installs the SIGTERM and SIGUSR1 handlers (SA_RESTART, so blocking calls are not cut
// short). Idempotent. A second signal does not escalate: Slurm's SIGKILL is the hard stop.
void install_stop_handlers();

// True once a handled signal arrived (and until clear_stop_request()).
bool stop_requested();

// The first signal that arrived (SIGTERM or SIGUSR1), 0 if none. Later ones do not replace it.
int stop_signal();

// "SIGTERM", "SIGUSR1", or "signal N".
std::string stop_signal_name(int signal);

// Forgets a recorded request; for tests.
void clear_stop_request();

}  // namespace hetu::runtime
