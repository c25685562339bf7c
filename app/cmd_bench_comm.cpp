// `hetu bench comm [--device cpu|cuda[:N]] [--iterations N]` (run under mpirun): the
// communicator's table of lib/bench/comm_benchmark.h.
#include "app/commands.h"
#include "lib/bench/comm_benchmark.h"

namespace hetu::app {

int run_bench_comm(const BenchCommOptions& options) {
  return bench::run_comm_benchmark({.iterations = options.iterations, .device = options.device});
}

}  // namespace hetu::app
