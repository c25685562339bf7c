// Deadlines for blocking MPI communication, and the job-wide abort. Every wait of the MPI
// communicator and of MpiSession goes through wait_all(): it polls the non-blocking requests
// and, after comm_timeout() seconds, asks every rank whether it still answers, logs which
// operation at which step waited for which ranks and which ranks did not answer, and aborts
// the job. abort_job() tells every other rank why before MPI_Abort, so each rank's log and
// stderr end with the error. See Note [Communication deadlines] in comm_deadline.cpp.
//
//   set_comm_timeout(20);                        // training.comm_timeout_s; 0: wait forever
//   MPI_Iallreduce(..., &request);
//   mpi_wait_all("all_reduce", {&request, 1}, [&](auto) { return members_but_me; });
#pragma once

#include <mpi.h>

#include <functional>
#include <span>
#include <string>
#include <vector>

namespace hetu {

// Exit codes of a multi-rank job that ends early (README, docs/config.md): 1 a runtime error
// on some rank (every rank exits 1 with its message), 2 a job-file or usage error found after
// launch on some rank, 3 a communication deadline expired (a rank stopped answering).
constexpr int kExitCommTimeout = 3;

// Seconds one blocking communication may wait (process-wide; default 600); 0: no deadline.
void set_comm_timeout(double seconds);
double comm_timeout();

// The world ranks a wait still waits for, given its requests (completed ones are
// MPI_REQUEST_NULL); called only when the deadline expires.
using WaitedFor = std::function<std::vector<int>(std::span<const MPI_Request>)>;

// Waits until every request completes. Past the deadline: logs, and aborts the job with
// kExitCommTimeout. While waiting it answers other ranks' liveness pings and abort notices.
void mpi_wait_all(const char* op, std::span<MPI_Request> requests, const WaitedFor& waited_for);

// Sends `message` to every other rank (each logs it, prints it to stderr and aborts with
// `exit_code`), waits a few seconds for them to confirm, then MPI_Abort(MPI_COMM_WORLD).
[[noreturn]] void mpi_abort_job(const std::string& message, int exit_code);

// Every world rank but this one, in order.
std::vector<int> other_ranks();

}  // namespace hetu
