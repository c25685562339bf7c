// One thread count for hetu's OpenMP loops and for OpenBLAS (which runs its own pthreads):
// setting both keeps the two from oversubscribing the cores. Also where the kernels' vector
// level and GEMM choice are first read (HETU_CPU_ISA, lib/ops/cpu/isa.h; HETU_CPU_GEMM,
// lib/ops/cpu/gemm_choice.h), so a bad value fails here, not inside a parallel loop.
#include <cblas.h>
#include <omp.h>

#include <cstdlib>

#include "lib/ops/cpu/gemm_choice.h"
#include "lib/ops/cpu/isa.h"
#include "lib/ops/ops.h"
#include "lib/util/strings.h"

namespace hetu::ops {

void set_num_threads(int threads) {
  if (threads <= 0) {
    const char* env = std::getenv("HETU_NUM_THREADS");
    std::optional<int64_t> parsed = env != nullptr ? parse_int64(env) : std::nullopt;
    HT_USAGE_CHECK(env == nullptr || (parsed && *parsed >= 1), "HETU_NUM_THREADS=\"{}\" is not a positive integer",
                   env == nullptr ? "" : env);
    threads = parsed ? static_cast<int>(*parsed) : omp_get_num_procs();
  }
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
  cpu::isa_level();
  cpu::gemm_choice();
}

int num_threads() { return omp_get_max_threads(); }

}  // namespace hetu::ops
