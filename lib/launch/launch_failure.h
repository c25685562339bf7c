// Which rank of a launch died, read from the launcher's own report of it (hetu launch reads
// the launcher's stderr): Open MPI's mpirun ("process rank 2 with PID .. exited on signal
// 9", "Process name: [[j,1],2] / Exit code: 1", "MPI_ABORT was invoked on rank 2") and
// Slurm's srun ("srun: error: node: task 2: Killed"). The first report wins: the ranks the
// launcher tears down afterwards are not lost. Except after a hang: a rank's communication
// deadline (lib/hspmd/comm_deadline) logs "rank(s) 1 stopped answering" and then aborts the
// job, so the launcher reports the aborting rank; the rank the deadline names as stopped
// wins over any report but another such line (the first rank named when it names several).
//
//   LaunchFailureParser p;
//   for (line : stderr_lines) p.feed(line);
//   if (p.failure()) ... p.failure()->rank, ->signal, ->exit_code
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace hetu::launch {

struct LaunchFailure {
  int64_t rank = -1;
  int signal = 0;      // the signal that ended it, or 0
  int exit_code = 0;   // its exit code when it exited (signal 0)
  std::string line;    // the launcher's line that said so
  bool stopped = false;  // named by a communication deadline as the rank that stopped answering
};

class LaunchFailureParser {
 public:
  void feed(const std::string& line);
  const std::optional<LaunchFailure>& failure() const { return failure_; }

 private:
  std::optional<LaunchFailure> failure_;
  int64_t pending_rank_ = -1;  // mpirun's "Process name" line, waiting for its "Exit code"
  std::string pending_line_;
};

}  // namespace hetu::launch
