// A short sgemm probe: the CPU's achievable f32 FLOP/s at the current thread count, the
// denominator of MFU on CPUs (where no datasheet peak applies). The best of OpenBLAS's sgemm
// and hetu's blocked_sgemm (when the CPU has AVX2): on a CPU where ours is the faster (Note
// [GEMM choice]) OpenBLAS alone would put the peak below what the training step reaches.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

#include "lib/ops/cpu/blocked_sgemm.h"
#include "lib/ops/cpu/isa.h"
#include "lib/ops/ops.h"

namespace hetu::ops {
namespace {

constexpr int kN = 512;

// FLOP/s of `run` (one kN³ GEMM) repeated for `seconds` after a warm-up call.
double rate(const std::function<void()>& run, double seconds) {
  run();
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  int64_t calls = 0;
  double elapsed = 0;
  do {
    run();
    ++calls;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  } while (elapsed < seconds);
  return 2.0 * kN * kN * kN * static_cast<double>(calls) / elapsed;
}

}  // namespace

double measure_sgemm_flops(double seconds) {
  std::vector<float> a(kN * kN, 0.5f), b(kN * kN, 0.25f), c(kN * kN);
  const bool blocked = cpu::isa_level() != cpu::IsaLevel::baseline;
  const double each = blocked ? seconds / 2 : seconds;
  double best = rate([&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kN, kN, kN, 1.0f, a.data(), kN, b.data(), kN, 0.0f, c.data(),
                kN);
  }, each);
  if (blocked) {
    best = std::max(best, rate([&] {
      cpu::blocked_sgemm(false, false, kN, kN, kN, a.data(), kN, b.data(), kN, false, c.data(), kN);
    }, each));
  }
  return best;
}

}  // namespace hetu::ops
