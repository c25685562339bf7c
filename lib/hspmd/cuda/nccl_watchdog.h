// NcclWatchdog: the communication deadline (comm_deadline.h) for the NCCL communicator. An
// NCCL call only enqueues work on the GPU's stream, so a peer that stopped shows up later, as
// a host that blocks forever on that stream. After each enqueued operation the communicator
// calls watch(): it records a CUDA event behind the operation, and a thread of the watchdog
// polls the events oldest first (cudaEventQuery) and every communicator's asynchronous error
// (ncclCommGetAsyncError). An operation older than comm_timeout() or an NCCL error logs the
// operation, the step and the ranks it waited for, aborts every NCCL communicator
// (ncclCommAbort, so no kernel keeps waiting) and ends the job with MPI_Abort (exit code 3 for
// a timeout, 1 for an NCCL error). The thread makes no other MPI call.
//
//   NcclWatchdog watchdog(device, rank);
//   ncclAllReduce(..., comm, stream);
//   watchdog.watch("all_reduce", stream, comm, {1, 2});
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace hetu {

class NcclWatchdog {
 public:
  NcclWatchdog(int device, int rank);
  ~NcclWatchdog();
  NcclWatchdog(const NcclWatchdog&) = delete;
  NcclWatchdog& operator=(const NcclWatchdog&) = delete;

  // Watches the operation just enqueued on `stream` over `comm` (waiting for `peers`).
  void watch(const char* op, cudaStream_t stream, ncclComm_t comm, std::vector<int> peers);

 private:
  struct Pending {
    const char* op;
    cudaEvent_t done;
    ncclComm_t comm;
    std::vector<int> peers;
    int64_t step;
    double enqueued_s;
  };
  void run();
  [[noreturn]] void fail(const std::string& message, int exit_code);

  int device_, rank_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Pending> pending_;
  std::set<ncclComm_t> comms_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace hetu
