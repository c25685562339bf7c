// The "sgemm candidate" rows of `hetu bench ops` (sgemm_candidate.h). Interleaving the
// two (OpenBLAS, ours, OpenBLAS, ...) and taking medians lets a shared, noisy machine give
// a fair ratio: both see the same load. On one thread each call is timed by the thread's CPU
// clock (time spent waiting for a core is not counted), on more by the wall clock. Before
// each call a 64 MiB buffer is written, so the operands come from memory as in a training
// step (where the ops between two GEMMs evict them), not from the cache of the last repeat.
// Shapes: a GPT-2 layer's four linear layers (q/k/v C→3C, projection C→C, MLP C→4C and
// 4C→C), each as the forward (x Wᵀ + bias: beta 1), the input gradient (dY W) and the weight
// gradient (dYᵀ X), plus the LM head's three for vocabulary C (scripts/bench/cpu_train.sh's
// byte-tokenizer rows: V = 256 = C).
#include "lib/bench/sgemm_candidate.h"

#include <cblas.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>
#include <fmt/core.h>

#include "lib/core/rng.h"
#include "lib/ops/cpu/blocked_sgemm.h"
#include "lib/ops/ops.h"

namespace hetu::bench {
namespace {

struct GemmShape {
  std::string label;
  bool ta, tb;
  int64_t m, n, k;
  bool accumulate;   // beta = 1 (the forward adds onto the bias rows)
  int calls;         // per training step
};

std::vector<float> random_floats(int64_t count, uint64_t seed) {
  std::vector<double> values(static_cast<size_t>(count));
  CounterRng(seed, "bench-sgemm").fill_uniform(values.data(), 0, count, -1.0, 1.0);
  return std::vector<float>(values.begin(), values.end());
}

// Seconds on the calling thread's CPU clock (one thread) or the monotonic clock.
double now(bool cpu_clock) {
  timespec t{};
  clock_gettime(cpu_clock ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<GemmShape> step_shapes(int64_t rows, int64_t c, int layers) {
  std::vector<GemmShape> shapes;
  // One linear layer in -> out: forward, input gradient, weight gradient.
  auto linear = [&](const std::string& name, int64_t in, int64_t out, bool bias, int calls) {
    shapes.push_back({name + " fwd", false, true, rows, out, in, bias, calls});
    shapes.push_back({name + " dx", false, false, rows, in, out, false, calls});
    shapes.push_back({name + " dw", true, false, out, in, rows, false, calls});
  };
  linear("qkv", c, 3 * c, true, layers);
  linear("proj", c, c, true, layers);
  linear("fc", c, 4 * c, true, layers);
  linear("fc2", 4 * c, c, true, layers);
  linear("head", c, c, false, 1);
  return shapes;
}

}  // namespace

void sgemm_candidate_rows(int64_t rows, int64_t hidden, int layers, int repeats) {
  const bool cpu_clock = ops::num_threads() == 1;
  std::vector<float> evict(size_t{16} << 20);
  auto cold = [&evict] { std::fill(evict.begin(), evict.end(), evict[1] + 1.0f); };
  double blas_step = 0, ours_step = 0, flops_step = 0;
  for (const GemmShape& s : step_shapes(rows, hidden, layers)) {
    const int64_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
    const std::vector<float> a = random_floats(s.m * s.k, 1), b = random_floats(s.k * s.n, 2);
    const std::vector<float> c0 = random_floats(s.m * s.n, 3);
    std::vector<float> c_blas = c0, c_ours = c0;
    auto blas = [&] {
      cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans, s.tb ? CblasTrans : CblasNoTrans,
                  static_cast<int>(s.m), static_cast<int>(s.n), static_cast<int>(s.k), 1.0f, a.data(),
                  static_cast<int>(lda), b.data(), static_cast<int>(ldb), s.accumulate ? 1.0f : 0.0f, c_blas.data(),
                  static_cast<int>(s.n));
    };
    auto ours = [&] {
      ops::cpu::blocked_sgemm(s.ta, s.tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb, s.accumulate, c_ours.data(),
                              s.n);
    };
    blas();  // warm-up: page faults, packing buffers
    ours();
    std::vector<double> t_blas, t_ours;
    for (int r = 0; r < repeats; ++r) {
      cold();
      const double t0 = now(cpu_clock);
      blas();
      const double t1 = now(cpu_clock);
      cold();
      const double t2 = now(cpu_clock);
      ours();
      const double t3 = now(cpu_clock);
      t_blas.push_back(t1 - t0);
      t_ours.push_back(t3 - t2);
    }
    const double flops = 2.0 * static_cast<double>(s.m * s.n * s.k);
    const double sb = median(t_blas), so = median(t_ours);
    blas_step += s.calls * sb;
    ours_step += s.calls * so;
    flops_step += s.calls * flops;
    const std::string name = fmt::format("sgemm candidate {} {}{} {}x{}x{}", s.label, s.ta ? 'T' : 'N', s.tb ? 'T' : 'N',
                                         s.m, s.n, s.k);
    std::fputs(fmt::format("{:<48} {:>16} {:>24}\n", name, fmt::format("{:.1f} GFLOP/s", flops / so / 1e9),
                           fmt::format("{:.2f}x OpenBLAS {:.1f}", sb / so, flops / sb / 1e9))
                   .c_str(),
               stdout);
  }
  std::fputs(fmt::format("{:<48} {:>16} {:>24}\n", fmt::format("sgemm candidate, step mix ({} rows)", rows),
                         fmt::format("{:.1f} GFLOP/s", flops_step / ours_step / 1e9),
                         fmt::format("{:.2f}x OpenBLAS {:.1f}", blas_step / ours_step, flops_step / blas_step / 1e9))
                 .c_str(),
             stdout);
}

}  // namespace hetu::bench
