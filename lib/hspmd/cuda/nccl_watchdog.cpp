// NcclWatchdog (nccl_watchdog.h): events behind NCCL operations, polled every 100 ms by a
// thread of their own against the communication deadline.
#include "lib/hspmd/cuda/nccl_watchdog.h"

#include <mpi.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>

#include "lib/hspmd/comm_deadline.h"
#include "lib/util/step_timer.h"

namespace hetu {
namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(100);

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::string ranks_str(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out.empty() ? "none" : out;
}

}  // namespace

NcclWatchdog::NcclWatchdog(int device, int rank) : device_(device), rank_(rank), thread_([this] { run(); }) {}

NcclWatchdog::~NcclWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
  for (const Pending& p : pending_) cudaEventDestroy(p.done);
}

void NcclWatchdog::watch(const char* op, cudaStream_t stream, ncclComm_t comm, std::vector<int> peers) {
  if (comm_timeout() <= 0) return;
  cudaEvent_t done = nullptr;
  if (cudaEventCreateWithFlags(&done, cudaEventDisableTiming) != cudaSuccess) return;  // unwatched, not wrong
  cudaEventRecord(done, stream);
  std::lock_guard<std::mutex> lock(mutex_);
  comms_.insert(comm);
  pending_.push_back({op, done, comm, std::move(peers), timing::current_step(), now_s()});
}

void NcclWatchdog::run() {
  cudaSetDevice(device_);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, kPollInterval, [this] { return stop_; });
    if (stop_) break;
    while (!pending_.empty() && cudaEventQuery(pending_.front().done) == cudaSuccess) {
      cudaEventDestroy(pending_.front().done);
      pending_.pop_front();
    }
    for (ncclComm_t comm : comms_) {
      ncclResult_t async = ncclSuccess;
      if (ncclCommGetAsyncError(comm, &async) == ncclSuccess && async != ncclSuccess && async != ncclInProgress) {
        const std::string op = pending_.empty() ? "an NCCL operation" : pending_.front().op;
        fail(fmt::format("NCCL error on rank {} in {}: {}", rank_, op, ncclGetErrorString(async)), 1);
      }
    }
    if (pending_.empty()) continue;
    const Pending& oldest = pending_.front();
    const double waited_s = now_s() - oldest.enqueued_s;
    if (waited_s > comm_timeout()) {
      fail(fmt::format("communication timed out: NCCL {} at step {} on rank {} waited {:.0f} s "
                       "(training.comm_timeout_s) for rank(s) {}",
                       oldest.op, oldest.step, rank_, waited_s, ranks_str(oldest.peers)),
           kExitCommTimeout);
    }
  }
}

void NcclWatchdog::fail(const std::string& message, int exit_code) {
  spdlog::error("{}; aborting every NCCL communicator and the job (exit code {})", message, exit_code);
  spdlog::default_logger()->flush();
  for (ncclComm_t comm : comms_) ncclCommAbort(comm);
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

}  // namespace hetu
