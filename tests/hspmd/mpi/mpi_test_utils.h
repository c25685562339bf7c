// Helpers for the tests that run under mpirun (test_hspmd_mpi): the world communicator that
// main.cpp owns, and agree(), which turns a per-rank verdict into one all ranks share.
#pragma once

#include <mpi.h>

#include "lib/hspmd/communicator.h"

namespace hetu::test {

Communicator& world();

// True when `ok` holds on every rank (a collective over MPI_COMM_WORLD).
inline bool agree(bool ok) {
  int local = ok ? 0 : 1, total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  return total == 0;
}

}  // namespace hetu::test
