// The Catch2 main of test_hspmd_mpi, run under mpirun: initialises MPI, owns the world
// communicator the tests use (mpi_test_utils.h), and makes every rank agree on the result:
// the failure counts of all ranks are summed, so a failure on one rank fails every rank.
// Tests must run the same collectives on every rank in the same order (no REQUIRE that
// could stop one rank early: decide pass/fail per case with agree()).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <mpi.h>

#include "lib/hspmd/mpi_session.h"
#include "tests/hspmd/mpi/mpi_test_utils.h"

namespace hetu::test {
namespace {
Communicator* g_world = nullptr;  // owned by main; set for the duration of the run
}  // namespace

Communicator& world() {
  HT_CHECK(g_world != nullptr, "test_hspmd_mpi: the world communicator is not set up");
  return *g_world;
}

}  // namespace hetu::test

int main(int argc, char** argv) {
  hetu::MpiSession session(&argc, &argv);
  int failed_everywhere = 0;
  {
    std::unique_ptr<hetu::Communicator> comm = hetu::make_mpi_communicator();
    hetu::test::g_world = comm.get();
    const int failed_here = Catch::Session().run(argc, argv);
    MPI_Allreduce(&failed_here, &failed_everywhere, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    hetu::test::g_world = nullptr;
  }
  if (session.rank() == 0)
    std::printf("test_hspmd_mpi: %d rank(s), %d failure(s) summed over ranks\n", session.world_size(),
                failed_everywhere);
  return failed_everywhere == 0 ? 0 : 1;
}
