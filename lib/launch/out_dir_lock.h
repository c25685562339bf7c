// One live `hetu train` per out_dir. Rank 0 of a run takes an exclusive flock(2) on
// out_dir/.hetu-train.lock before anything in out_dir is opened for writing and holds it
// until the process ends; the kernel drops it when the process dies (kill -9 included), so
// a crashed run never keeps its folder. Only rank 0 locks: under mpirun the ranks of one run
// may share out_dir over a network filesystem, where a lock per host would refuse the run's
// own ranks. Every rank learns rank 0's verdict (collective), so a refused run exits 2 on
// all ranks before it has written anything.
//
//   OutDirLock lock = lock_out_dir(c.job.out_dir, mpi);   // UsageError if a live run holds it
#pragma once

#include <string>

#include "lib/hspmd/mpi_session.h"

namespace hetu::launch {

class OutDirLock {
 public:
  OutDirLock() = default;
  explicit OutDirLock(int fd) : fd_(fd) {}
  OutDirLock(OutDirLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  OutDirLock& operator=(OutDirLock&& other) noexcept;
  OutDirLock(const OutDirLock&) = delete;
  OutDirLock& operator=(const OutDirLock&) = delete;
  ~OutDirLock();

 private:
  int fd_ = -1;  // the locked file on rank 0; -1 elsewhere
};

// Creates out_dir if needed. Collective over every rank of `mpi`.
OutDirLock lock_out_dir(const std::string& out_dir, const MpiSession& mpi);

}  // namespace hetu::launch
