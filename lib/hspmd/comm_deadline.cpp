// Deadlines for blocking MPI communication and the job-wide abort (comm_deadline.h).
//
// Note [Communication deadlines]: one stopped or hung rank would make every other rank wait
// in its next collective forever, and an error on one rank would leave the others blocked.
// So no rank blocks inside MPI: every operation is posted non-blocking and mpi_wait_all()
// polls it (MPI_Testall; yielding the core for the first 100 ms, then sleeping 1 ms between
// polls). Control messages travel point to point on MPI_COMM_WORLD under their own tags,
// which no data message uses:
// - ping / pong: when a wait passes comm_timeout(), the rank pings every other rank and
//   waits kProbeSeconds for the answers. A rank answers while it polls a wait of its own
//   (every healthy rank of a hung job does: it waits too), so the ranks that do not answer
//   are the ones that stopped (SIGSTOP, a hang, a long compute that never reaches the next
//   communication). The log line names the operation, the step (timing::current_step()), the
//   ranks the wait still waited for, and the silent ranks.
// - abort / ack: mpi_abort_job() sends its message to every other rank, waits up to
//   kAckSeconds for each to confirm, then calls MPI_Abort. A rank that receives the message
//   (in any wait) logs it as an error (console and rank log), confirms and waits to be
//   killed by that abort, aborting itself after kAckSeconds + kOrphanSeconds if nothing did.
// A job so ends within comm_timeout() + kProbeSeconds + kAckSeconds + the launcher's kill.
#include "lib/hspmd/comm_deadline.h"

#include <sched.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "lib/util/step_timer.h"
#include "lib/util/wait_trace.h"

namespace hetu {
namespace {

constexpr int kPingTag = 7010;
constexpr int kPongTag = 7011;
constexpr int kAbortTag = 7012;
constexpr int kAckTag = 7013;
constexpr double kProbeSeconds = 5;    // how long the silent ranks get to answer a ping
constexpr double kAckSeconds = 5;      // how long an aborting rank waits for the others to log
constexpr double kOrphanSeconds = 10;  // a notified rank's wait for the abort, beyond kAckSeconds
constexpr double kBusySeconds = 1e-4;  // a wait polls without pause this long (a small collective's time)
                                       // unless ranks share cores,
constexpr double kSpinSeconds = 0.1;   // then yields the core between polls this long, then sleeps 1 ms
constexpr double kServiceSeconds = 1e-3;  // control messages are looked at this often

using Clock = std::chrono::steady_clock;

double g_timeout_s = 600;
const int kPayload = 1;  // pings, pongs and acks carry one int nobody reads

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Open MPI's launchers say when ranks share cores (mpirun: more ranks than cores; the Slurm test
// asks for it): then a wait yields at once, since polling would take the core a peer needs.
bool ranks_share_cores() {
  static const bool shared = [] {
    for (const char* name : {"OMPI_MCA_mpi_oversubscribe", "OMPI_MCA_mpi_yield_when_idle"}) {
      const char* value = std::getenv(name);
      if (value != nullptr && std::string(value) == "1") return true;
    }
    return false;
  }();
  return shared;
}

void pause_between_polls(double elapsed_s) {
  if (elapsed_s < kBusySeconds && !ranks_share_cores()) return;
  if (elapsed_s < kSpinSeconds) {
    sched_yield();
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

std::string ranks_str(const std::vector<int>& ranks) {
  if (ranks.empty()) return "none";
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

std::string step_str() {
  const int64_t step = timing::current_step();
  return step > 0 ? fmt::format("step {}", step) : std::string("start-up (before step 1)");
}

// Fire and forget: the payload is static, so the request may be freed at once.
void send_control(int peer, int tag) {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Isend(&kPayload, 1, MPI_INT, peer, tag, MPI_COMM_WORLD, &request);
  MPI_Request_free(&request);
}

[[noreturn]] void abort_now(int exit_code) {
  spdlog::default_logger()->flush();
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

// An abort notice is 4 bytes of exit code, then the message.
std::vector<char> encode_notice(const std::string& message, int exit_code) {
  std::vector<char> out(sizeof(int) + message.size());
  std::memcpy(out.data(), &exit_code, sizeof(int));
  std::memcpy(out.data() + sizeof(int), message.data(), message.size());
  return out;
}

// Answers pending pings; handles an abort notice from another rank: logs it, confirms, and
// (unless `aborting`: this rank ends the job itself) waits for the abort.
void service_control(bool aborting) {
  for (;;) {
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, kPingTag, MPI_COMM_WORLD, &flag, &status);
    if (!flag) break;
    int ignored = 0;
    MPI_Recv(&ignored, 1, MPI_INT, status.MPI_SOURCE, kPingTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    send_control(status.MPI_SOURCE, kPongTag);
  }
  int flag = 0;
  MPI_Status status;
  MPI_Iprobe(MPI_ANY_SOURCE, kAbortTag, MPI_COMM_WORLD, &flag, &status);
  if (!flag) return;
  int bytes = 0;
  MPI_Get_count(&status, MPI_CHAR, &bytes);
  std::vector<char> notice(static_cast<size_t>(std::max(bytes, static_cast<int>(sizeof(int)))), '\0');
  MPI_Recv(notice.data(), bytes, MPI_CHAR, status.MPI_SOURCE, kAbortTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  int exit_code = 1;
  std::memcpy(&exit_code, notice.data(), sizeof(int));
  const std::string message(notice.data() + sizeof(int), notice.size() - sizeof(int));
  send_control(status.MPI_SOURCE, kAckTag);
  if (aborting) return;
  spdlog::error("the job ends: rank {} aborts it with exit code {}: {}", status.MPI_SOURCE, exit_code, message);
  spdlog::default_logger()->flush();
  const Clock::time_point start = Clock::now();
  while (seconds_since(start) < kAckSeconds + kOrphanSeconds) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  abort_now(exit_code);
}

// The ranks of `ranks` that do not answer a ping within kProbeSeconds.
std::vector<int> silent_ranks(const std::vector<int>& ranks) {
  const size_t n = ranks.size();
  std::vector<int> pongs(n, 0);
  std::vector<MPI_Request> answers(n, MPI_REQUEST_NULL);
  for (size_t i = 0; i < n; ++i) {
    MPI_Irecv(&pongs[i], 1, MPI_INT, ranks[i], kPongTag, MPI_COMM_WORLD, &answers[i]);
    send_control(ranks[i], kPingTag);
  }
  const Clock::time_point start = Clock::now();
  for (;;) {
    int all = 0;
    MPI_Testall(static_cast<int>(n), answers.data(), &all, MPI_STATUSES_IGNORE);
    if (all || seconds_since(start) > kProbeSeconds) break;
    service_control(/*aborting=*/false);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::vector<int> silent;
  for (size_t i = 0; i < n; ++i) {
    int done = 0;
    if (answers[i] != MPI_REQUEST_NULL) MPI_Test(&answers[i], &done, MPI_STATUS_IGNORE);
    if (answers[i] == MPI_REQUEST_NULL) continue;
    silent.push_back(ranks[i]);
    MPI_Cancel(&answers[i]);
    MPI_Request_free(&answers[i]);
  }
  return silent;
}

[[noreturn]] void abort_job_except(const std::string& message, int exit_code, const std::vector<int>& skip) {
  const std::vector<char> notice = encode_notice(message, exit_code);
  std::vector<MPI_Request> sends, acks;
  std::vector<int> ack_payload;
  std::vector<int> told;
  for (int r : other_ranks()) {
    if (std::find(skip.begin(), skip.end(), r) == skip.end()) told.push_back(r);
  }
  sends.resize(told.size(), MPI_REQUEST_NULL);
  acks.resize(told.size(), MPI_REQUEST_NULL);
  ack_payload.resize(told.size(), 0);
  for (size_t i = 0; i < told.size(); ++i) {
    MPI_Irecv(&ack_payload[i], 1, MPI_INT, told[i], kAckTag, MPI_COMM_WORLD, &acks[i]);
    MPI_Isend(notice.data(), static_cast<int>(notice.size()), MPI_CHAR, told[i], kAbortTag, MPI_COMM_WORLD, &sends[i]);
  }
  const Clock::time_point start = Clock::now();
  for (;;) {
    int all = 0;
    MPI_Testall(static_cast<int>(acks.size()), acks.data(), &all, MPI_STATUSES_IGNORE);
    if (all || seconds_since(start) > kAckSeconds) break;
    service_control(/*aborting=*/true);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  abort_now(exit_code);
}

// Past the deadline: who is still waited for, who answers; log it and end the job.
[[noreturn]] void expire(const char* op, std::span<MPI_Request> requests, const WaitedFor& waited_for) {
  for (MPI_Request& r : requests) {  // completed requests become MPI_REQUEST_NULL
    int done = 0;
    if (r != MPI_REQUEST_NULL) MPI_Test(&r, &done, MPI_STATUS_IGNORE);
  }
  const std::vector<int> waited = waited_for(requests);
  const std::string where = fmt::format("{} at {} on rank {}", op, step_str(), world_rank());
  spdlog::error("{} waited {} s (training.comm_timeout_s) for rank(s) {}; pinging every rank", where, g_timeout_s,
                ranks_str(waited));
  spdlog::default_logger()->flush();
  const std::vector<int> silent = silent_ranks(other_ranks());
  std::string message;
  if (silent.empty()) {
    message = fmt::format("communication timed out: {} waited {} s for rank(s) {}, but every rank answers a ping: "
                          "the ranks wait for each other (did a rank skip a collective?)",
                          where, g_timeout_s, ranks_str(waited));
  } else {
    message = fmt::format("communication timed out: {} waited {} s for rank(s) {}; rank(s) {} stopped answering (no "
                          "reply to a ping within {} s)",
                          where, g_timeout_s, ranks_str(waited), ranks_str(silent), kProbeSeconds);
  }
  spdlog::error("{}; aborting the job (exit code {})", message, kExitCommTimeout);
  abort_job_except(message, kExitCommTimeout, silent);
}

}  // namespace

void set_comm_timeout(double seconds) { g_timeout_s = seconds; }
double comm_timeout() { return g_timeout_s; }

std::vector<int> other_ranks() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int me = world_rank();
  std::vector<int> out;
  for (int r = 0; r < size; ++r) {
    if (r != me) out.push_back(r);
  }
  return out;
}

void mpi_wait_all(const char* op, std::span<MPI_Request> requests, const WaitedFor& waited_for) {
  const int n = static_cast<int>(requests.size());
  int done = 0;
  struct Traced {  // HETU_WAIT_TRACE (wait_trace.h): the wait's two ends
    const char* op;
    double enter_s;
    ~Traced() {
      if (enter_s >= 0) wait_trace::wait(op, enter_s, wait_trace::now_s());
    }
  } traced{op, wait_trace::enabled() ? wait_trace::now_s() : -1.0};
  MPI_Testall(n, requests.data(), &done, MPI_STATUSES_IGNORE);
  if (done) return;
  const Clock::time_point start = Clock::now();
  double next_service_s = 0;
  for (;;) {
    MPI_Testall(n, requests.data(), &done, MPI_STATUSES_IGNORE);
    if (done) return;
    const double elapsed_s = seconds_since(start);
    if (elapsed_s >= next_service_s) {
      service_control(/*aborting=*/false);
      next_service_s = elapsed_s + kServiceSeconds;
    }
    if (g_timeout_s > 0 && elapsed_s > g_timeout_s) expire(op, requests, waited_for);
    pause_between_polls(elapsed_s);
  }
}

void mpi_abort_job(const std::string& message, int exit_code) { abort_job_except(message, exit_code, {}); }

}  // namespace hetu
