// EmulatedCommunicator over real MPI on 2 ranks, timed by the test's own clock: a rank of
// slowdown 2 takes about twice its measured compute (the sleep frees the core: its CPU time
// does not grow), and a p2p message across emulated nodes arrives latency + bytes / bandwidth
// later. Wall-clock bounds are tolerant (the machine is shared); run alone as ctest
// emulation_timing_np2 (RUN_SERIAL), excluded from the hspmd_mpi_npN runs.
#include <catch2/catch.hpp>
#include <time.h>

#include <chrono>

#include "lib/hspmd/emulated_comm.h"
#include "lib/ops/ops.h"
#include "tests/hspmd/mpi/mpi_test_utils.h"

using namespace hetu;

namespace {

double wall_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// About 0.05-0.5 s of real work, depending on the machine and its load.
void compute() {
  Tensor a = full({192, 192}, 0.5), b = full({192, 192}, 0.25);
  for (int i = 0; i < 15; ++i) a = ops::mul_scalar(ops::matmul(a, b), 1.0 / 48);
}

}  // namespace

TEST_CASE("emulated slowdown 2: the slow rank takes twice its compute, sleeping", "[emulation_timing]") {
  Communicator& world = test::world();
  if (world.world_size() != 2) return;  // timed on exactly two ranks
  const bool slow = world.rank() == 1;
  EmulatedCommunicator comm(make_mpi_communicator(), EmulationSpec{slow ? 2.0 : 1.0, {0, 1}, {{}, {}}});
  comm.barrier(world.world());  // restarts the compute clock on both ranks
  const double start = wall_s();
  compute();
  const double computed = wall_s() - start;
  const double cpu_before = thread_cpu_s();
  comm.barrier(world.world());
  const double total = wall_s() - start;
  const double cpu_in_barrier = thread_cpu_s() - cpu_before;
  bool ok = true;
  if (slow) {
    INFO("compute " << computed << " s, compute + barrier " << total << " s, CPU time in the barrier "
                    << cpu_in_barrier << " s, slept " << comm.stats().slowdown_sleep_s << " s");
    CHECK(total >= 1.95 * computed);
    CHECK(total <= 2.4 * computed + 0.05);
    CHECK(cpu_in_barrier <= 0.25 * computed);  // the sleep freed the core
    ok = total >= 1.95 * computed && total <= 2.4 * computed + 0.05 && cpu_in_barrier <= 0.25 * computed;
  } else {
    CHECK(comm.stats().slowdown_sleep_s == 0);
    ok = comm.stats().slowdown_sleep_s == 0;
  }
  CHECK(test::agree(ok));
}

TEST_CASE("emulated link: a p2p message of known size arrives latency + bytes / bandwidth later",
          "[emulation_timing]") {
  Communicator& world = test::world();
  if (world.world_size() != 2) return;
  // Rank 0 on node 0 (not emulated), rank 1 on node 1: 0.4 Gb/s, 2000 us.
  EmulatedCommunicator comm(make_mpi_communicator(), EmulationSpec{1.0, {0, 1}, {{}, {0.4, 2000}}});
  const int64_t elements = int64_t{1} << 20;  // 4 MiB of f32
  const double expected = 2000e-6 + 4.0 * static_cast<double>(elements) * 8 / 0.4e9;  // 85.9 ms
  Tensor message = full({elements}, 1.0);
  world.barrier(world.world());
  const double start = wall_s();
  if (world.rank() == 0) {
    comm.send(message, 1);
  } else {
    comm.recv(message, 0);
  }
  const double elapsed = wall_s() - start;
  bool ok = true;
  if (world.rank() == 1) {
    INFO("expected " << expected << " s, the message took " << elapsed << " s");
    CHECK(elapsed >= 0.8 * expected);
    CHECK(elapsed <= expected + 0.06);
    ok = elapsed >= 0.8 * expected && elapsed <= expected + 0.06;
  }
  CHECK(test::agree(ok));
}
