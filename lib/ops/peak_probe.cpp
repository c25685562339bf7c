// A short OpenBLAS sgemm probe: the CPU's achievable FLOP/s at the current thread count,
// the denominator of MFU on CPUs (where no datasheet peak applies).
#include <cblas.h>

#include <chrono>
#include <vector>

#include "lib/ops/ops.h"

namespace hetu::ops {

double measure_sgemm_flops(double seconds) {
  constexpr int n = 512;
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n);
  auto run = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  };
  run();  // warm-up
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  int64_t calls = 0;
  double elapsed = 0;
  do {
    run();
    ++calls;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  } while (elapsed < seconds);
  return 2.0 * n * n * n * static_cast<double>(calls) / elapsed;
}

}  // namespace hetu::ops
