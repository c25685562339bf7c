// MpiSession: MPI init/finalize, rank, world size and host name of this process; its
// collectives and abort go through comm_deadline.h.
#include "lib/hspmd/mpi_session.h"

#include <algorithm>

#include <mpi.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "lib/hspmd/comm_deadline.h"
#include "lib/util/error.h"

namespace hetu {
namespace {

constexpr double kFinalizeSeconds = 20;

}  // namespace

MpiSession::MpiSession(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    HT_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) == MPI_SUCCESS,
             "MPI_Init_thread failed");
    owns_mpi_ = true;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size_);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  host_.assign(name, static_cast<size_t>(length));
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owns_mpi_ && !finalized) MPI_Finalize();
}

int MpiSession::finalize(int exit_code) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!owns_mpi_ || finalized) return exit_code;
  if (world_size_ > 1) {
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Ibarrier(MPI_COMM_WORLD, &request);
    mpi_wait_all("the barrier before MPI_Finalize", {&request, 1}, [](auto) { return other_ranks(); });
  }
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mutex);
    if (finished.wait_for(lock, std::chrono::duration<double>(kFinalizeSeconds), [&] { return done; })) return;
    spdlog::warn("MPI_Finalize did not return within {} s after every rank finished (the launcher's finalize); "
                 "exiting with {} without it", kFinalizeSeconds, exit_code);
    spdlog::default_logger()->flush();
    std::_Exit(exit_code);
  });
  MPI_Finalize();
  {
    std::lock_guard<std::mutex> lock(mutex);
    done = true;
  }
  finished.notify_one();
  watchdog.join();
  return exit_code;
}

void MpiSession::abort(int exit_code, const std::string& message) const {
  if (world_size_ == 1) std::exit(exit_code);
  mpi_abort_job(message, exit_code);
}

std::string mpi_library_version() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(version, &length);
  std::string text(version, static_cast<size_t>(length));
  size_t comma = text.find(',');  // "Open MPI v4.1.4, package: ..." -> "Open MPI v4.1.4"
  return comma == std::string::npos ? text : text.substr(0, comma);
}

bool MpiSession::all_agree(bool value) const {
  if (world_size_ == 1) return value;
  int mine = value ? 1 : 0, all = 0;
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Iallreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD, &request);
  mpi_wait_all("all_agree", {&request, 1}, [](auto) { return other_ranks(); });
  return all != 0;
}

std::vector<std::string> MpiSession::all_hosts() const {
  if (world_size_ == 1) return {host_};
  std::vector<char> mine(MPI_MAX_PROCESSOR_NAME, '\0');
  std::copy(host_.begin(), host_.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(host_.size(), mine.size() - 1)),
            mine.begin());
  std::vector<char> all(mine.size() * static_cast<size_t>(world_size_));
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Iallgather(mine.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                 MPI_COMM_WORLD, &request);
  mpi_wait_all("all_hosts", {&request, 1}, [](auto) { return other_ranks(); });
  std::vector<std::string> hosts;
  for (int r = 0; r < world_size_; ++r) hosts.emplace_back(all.data() + static_cast<size_t>(r) * mine.size());
  return hosts;
}

}  // namespace hetu
