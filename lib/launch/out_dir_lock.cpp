// The out_dir lock of `hetu train` (out_dir_lock.h): flock(2) on out_dir/.hetu-train.lock,
// whose contents name the holder (pid, host, start time) for the refusal message.
#include "lib/launch/out_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/core.h>

#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace hetu::launch {
namespace {

constexpr const char* kLockFile = ".hetu-train.lock";

// Rank 0: the locked descriptor, or -1 with `holder` describing who has it.
int try_lock(const std::string& out_dir, const std::string& host, std::string& holder) {
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  HT_USAGE_CHECK(!ec, "job.out_dir: cannot create {}: {}", out_dir, ec.message());
  const std::string path = (std::filesystem::path(out_dir) / kLockFile).string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  HT_USAGE_CHECK(fd >= 0, "job.out_dir: cannot open {}: {}", path, std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    HT_USAGE_CHECK(err == EWOULDBLOCK, "job.out_dir: cannot lock {}: {}", path, std::strerror(err));
    std::ifstream in(path);
    std::getline(in, holder);
    holder = std::string(trim(holder));
    return -1;
  }
  // Ours now: record who holds it (only ever read to explain a refusal).
  const std::time_t now = std::time(nullptr);
  char started[32] = {};
  std::strftime(started, sizeof(started), "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&now));
  const std::string text = fmt::format("pid {} on {}, started {}\n", ::getpid(), host, started);
  if (::ftruncate(fd, 0) == 0 && ::pwrite(fd, text.data(), text.size(), 0) < 0) {
    // The description is a courtesy; the lock itself is what matters.
  }
  return fd;
}

}  // namespace

OutDirLock& OutDirLock::operator=(OutDirLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

OutDirLock::~OutDirLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

OutDirLock lock_out_dir(const std::string& out_dir, const MpiSession& mpi) {
  int fd = -1;
  std::string holder;
  std::string problem;
  if (mpi.rank() == 0) {
    try {
      fd = try_lock(out_dir, mpi.host(), holder);
    } catch (const UsageError& error) {
      problem = error.message();
    }
  }
  const bool locked = mpi.all_agree(mpi.rank() != 0 || fd >= 0);
  if (locked) return OutDirLock(fd);
  if (fd >= 0) ::close(fd);
  if (!problem.empty()) HT_USAGE_ERROR("{}", problem);
  HT_USAGE_ERROR("job.out_dir: {} is in use by another hetu train ({}); wait for it to end, stop it, or give this "
                 "run another job.out_dir (--set job.out_dir=...)",
                 out_dir, holder.empty() ? "holder unknown" : holder);
}

}  // namespace hetu::launch
