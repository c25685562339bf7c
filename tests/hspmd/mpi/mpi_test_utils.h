// Helpers for the tests that run under mpirun (test_hspmd_mpi): the world communicator that
// main.cpp owns, agree(), which turns a per-rank verdict into one all ranks share, and
// SharedDir, a temporary folder every rank names the same.
#pragma once

#include <fmt/format.h>
#include <mpi.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "lib/hspmd/communicator.h"

namespace hetu::test {

Communicator& world();

// True when `ok` holds on every rank (a collective over MPI_COMM_WORLD).
inline bool agree(bool ok) {
  int local = ok ? 0 : 1, total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  return total == 0;
}

// A folder every rank names the same (rank 0's pid), empty at the start, removed at the end.
struct SharedDir {
  std::filesystem::path path;
  explicit SharedDir(const std::string& name) {
    Tensor pid = full({1}, static_cast<double>(::getpid()), DType::f64);
    world().broadcast(pid, 0, world().world());
    path = std::filesystem::temp_directory_path() /
           fmt::format("hetu_test_{}_{}", name, static_cast<int64_t>(pid.item()));
    if (world().rank() == 0) std::filesystem::remove_all(path);
    world().barrier(world().world());
  }
  ~SharedDir() {
    world().barrier(world().world());
    std::error_code ec;
    if (world().rank() == 0) std::filesystem::remove_all(path, ec);
  }
  std::string str(const std::string& name = "") const { return (name.empty() ? path : path / name).string(); }
};

}  // namespace hetu::test
