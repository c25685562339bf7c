// The launcher messages LaunchFailureParser recognises (launch_failure.h).
#include "lib/launch/launch_failure.h"

#include <regex>

#include "lib/hspmd/comm_deadline.h"

namespace hetu::launch {

void LaunchFailureParser::feed(const std::string& line) {
  // comm_deadline.cpp's message: "... waited 20 s for rank(s) 1, 2; rank(s) 1 stopped answering ...".
  static const std::regex deadline_stopped(R"(communication timed out: .*rank\(s\) (\d+)[0-9, ]* stopped answering)");
  std::smatch m;
  if ((!failure_ || !failure_->stopped) && std::regex_search(line, m, deadline_stopped)) {
    failure_ = LaunchFailure{std::stoll(m[1]), 0, kExitCommTimeout, line, true};
    return;
  }
  if (failure_) return;
  static const std::regex mpirun_signal(R"(process rank (\d+) with PID \d+ on node \S+ exited on signal (\d+))");
  static const std::regex mpirun_name(R"(Process name: \[\[\d+,\d+\],(\d+)\])");
  static const std::regex mpirun_exit(R"(Exit code:\s+(\d+))");
  static const std::regex mpi_abort(R"(MPI_ABORT was invoked on rank (\d+).*)");
  static const std::regex srun_task(R"(srun: error: \S+: tasks? (\d+)[-0-9,]*: (.*))");
  static const std::regex srun_exit(R"(Exited with exit code (\d+))");
  if (std::regex_search(line, m, mpirun_signal)) {
    failure_ = LaunchFailure{std::stoll(m[1]), std::stoi(m[2]), 0, line};
  } else if (std::regex_search(line, m, mpirun_name)) {
    pending_rank_ = std::stoll(m[1]);
    pending_line_ = line;
  } else if (pending_rank_ >= 0 && std::regex_search(line, m, mpirun_exit)) {
    failure_ = LaunchFailure{pending_rank_, 0, std::stoi(m[1]), pending_line_ + " / " + line};
  } else if (std::regex_search(line, m, mpi_abort)) {
    failure_ = LaunchFailure{std::stoll(m[1]), 0, 1, line};
  } else if (std::regex_search(line, m, srun_task)) {
    const std::string what = m[2];
    std::smatch code;
    const bool exited = std::regex_search(what, code, srun_exit);
    failure_ = LaunchFailure{std::stoll(m[1]), exited ? 0 : 9, exited ? std::stoi(code[1]) : 0, line};
  }
}

}  // namespace hetu::launch
