// The MPI child of tests/e2e/group_order.sh (3 ranks): two overlapping groups are created in a
// different order on different ranks, a program error. Rank 0 makes {2,1,0} and then {0,1},
// rank 1 makes {0,1} first, rank 2 only {2,1,0}, each by a barrier on the group (the first use
// of a group creates its communicator). Every rank must wait in its members' barrier under
// the deadline (argv[1] seconds) until it ends the job saying the ranks wait for each other
// (Note [Group creation] in lib/hspmd/comm_mpi.cpp); with one tag shared by every group's
// barrier, ranks 0 and 1 would take each other's messages, block in MPI_Comm_create_group and
// be named as stopped.
#include <cstdio>
#include <string>

#include "lib/hspmd/comm_deadline.h"
#include "lib/hspmd/communicator.h"
#include "lib/hspmd/mpi_session.h"

int main(int argc, char** argv) {
  hetu::MpiSession session(&argc, &argv);
  if (argc != 2 || session.world_size() != 3) {
    std::fprintf(stderr, "usage: mpirun -np 3 group_order_child TIMEOUT_S\n");
    return session.finalize(2);
  }
  hetu::set_comm_timeout(std::stod(argv[1]));
  const hetu::DeviceGroup all({2, 1, 0}), pair({0, 1});  // not the world in order: no MPI_Comm_idup
  {
    std::unique_ptr<hetu::Communicator> comm = hetu::make_mpi_communicator();
    if (session.rank() == 1) {
      comm->barrier(pair);
      comm->barrier(all);
    } else {
      comm->barrier(all);
      if (session.rank() == 0) comm->barrier(pair);
    }
  }
  std::printf("rank %d: every barrier passed\n", session.rank());
  return session.finalize(0);
}
