// `hetu bench ops`: throughput of the CPU kernels next to peers measured in the same run,
// so the ratios mean something on a shared, noisy machine:
//  - matmul GFLOP/s at model-like shapes vs raw single-thread OpenBLAS sgemm (the peak);
//  - fused causal attention forward/backward GFLOP/s (B=4, H=4, T=256, D=64) vs that peak;
//  - layer_norm forward GB/s vs memcpy of the same bytes.
// Each timing is the best of several repetitions of at least `min_seconds`.
#include <cblas.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <fmt/core.h>

#include "app/commands.h"
#include "lib/core/rng.h"
#include "lib/ops/ops.h"

namespace hetu::app {
namespace {

using Clock = std::chrono::steady_clock;

// Seconds per call: best over `reps` batches, each running fn until min_seconds passed.
double time_call(const std::function<void()>& fn, double min_seconds, int reps = 3) {
  fn();  // warm-up: page faults, thread pools
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    int64_t calls = 0;
    const auto start = Clock::now();
    double elapsed = 0;
    do {
      fn();
      ++calls;
      elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    } while (elapsed < min_seconds);
    best = std::min(best, elapsed / static_cast<double>(calls));
  }
  return best;
}

Tensor random(const Shape& shape, uint64_t seed) {
  Tensor t = empty(shape, DType::f32);
  CounterRng(seed, "bench").fill_uniform(t.data<float>(), 0, t.numel(), -1.0f, 1.0f);
  return t;
}

void row(const std::string& name, const std::string& value, const std::string& ratio) {
  std::fputs(fmt::format("{:<44} {:>14} {:>22}\n", name, value, ratio).c_str(), stdout);
}

}  // namespace

int run_bench_ops(const BenchOptions& options) {
  const double t_min = options.quick ? 0.05 : 0.3;
  ops::set_num_threads(options.threads);
  const int threads = ops::num_threads();
  std::fputs(fmt::format("hetu bench ops: {} thread(s){}; best of 3 x >= {:.2f} s\n\n", threads,
                         options.quick ? " (quick)" : "", t_min).c_str(), stdout);
  row("benchmark", "result", "ratio");

  // Peer: raw OpenBLAS sgemm on one thread, square 1024 (the machine's single-thread peak).
  const int64_t p = 1024;
  const Tensor pa = random({p, p}, 1), pb = random({p, p}, 2);
  Tensor pc = empty({p, p});
  openblas_set_num_threads(1);
  const double peak_s = time_call([&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(p), static_cast<int>(p), static_cast<int>(p), 1.0f,
                pa.data<float>(), static_cast<int>(p), pb.data<float>(), static_cast<int>(p), 0.0f, pc.data<float>(), static_cast<int>(p));
  }, t_min);
  ops::set_num_threads(options.threads);
  const double peak = 2.0 * static_cast<double>(p * p * p) / peak_s / 1e9;
  row("peer: OpenBLAS sgemm 1024^3, 1 thread", fmt::format("{:.1f} GFLOP/s", peak), "1.00x (peak)");
  auto vs_peak = [&](double gflops) { return fmt::format("{:.2f}x peak, {:.2f}x/thread", gflops / peak, gflops / peak / threads); };

  struct MatmulShape { const char* label; Shape a, b; bool tb; };
  const std::vector<MatmulShape> shapes = {
      {"matmul (512x512)@(512x512)", {512, 512}, {512, 512}, false},
      {"matmul linear (8x128x768)@(2304x768)^T", {8, 128, 768}, {2304, 768}, true},
      {"matmul linear (8x128x3072)@(768x3072)^T", {8, 128, 3072}, {768, 3072}, true},
      {"matmul batched (16x256x64)@(16x64x256)", {16, 256, 64}, {16, 64, 256}, false},
  };
  for (const MatmulShape& s : shapes) {
    const Tensor a = random(s.a, 3), b = random(s.b, 4);
    const int64_t k = s.a.back();
    const int64_t n = s.tb ? s.b[0] : s.b.back();
    const double flops = 2.0 * static_cast<double>(shape_numel(s.a) / k) * static_cast<double>(k) * static_cast<double>(n);
    const double sec = time_call([&] { ops::matmul(a, b, false, s.tb); }, t_min);
    row(s.label, fmt::format("{:.1f} GFLOP/s", flops / sec / 1e9), vs_peak(flops / sec / 1e9));
  }

  // Attention at (B=4, H=4, T=256, D=64): causal forward does 2·B·H·T²·D useful FLOPs
  // (QKᵀ and PV over the lower triangle); the backward does 2.5x that.
  const int64_t B = 4, H = 4, T = 256, D = 64;
  const Tensor q = random({B, H, T, D}, 5), k = random({B, H, T, D}, 6), v = random({B, H, T, D}, 7);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  ops::AttentionResult fwd = ops::attention(q, k, v, scale);
  const Tensor dout = random({B, H, T, D}, 8);
  const double attn_flops = 2.0 * static_cast<double>(B * H * T * T * D);
  const double fwd_s = time_call([&] { ops::attention(q, k, v, scale); }, t_min);
  const double bwd_s = time_call([&] { ops::attention_backward(dout, q, k, v, fwd.out, fwd.lse, scale); }, t_min);
  row("attention fwd B4 H4 T256 D64 (causal)", fmt::format("{:.1f} GFLOP/s", attn_flops / fwd_s / 1e9),
      vs_peak(attn_flops / fwd_s / 1e9));
  row("attention bwd B4 H4 T256 D64 (causal)", fmt::format("{:.1f} GFLOP/s", 2.5 * attn_flops / bwd_s / 1e9),
      vs_peak(2.5 * attn_flops / bwd_s / 1e9));

  // layer_norm (8·1024 rows of 768): reads x, writes out -> 2·N·C·4 bytes; peer: memcpy.
  const int64_t rows = 8 * 1024, C = 768;
  const Tensor x = random({rows, C}, 9), w = random({C}, 10), bias = random({C}, 11);
  Tensor copy_dst = empty({rows, C});
  const double bytes = 2.0 * static_cast<double>(rows * C) * 4.0;
  const double memcpy_s = time_call([&] { std::memcpy(copy_dst.data<float>(), x.data<float>(), static_cast<size_t>(rows * C) * 4); }, t_min);
  const double ln_s = time_call([&] { ops::layer_norm(x, w, bias, 1e-5); }, t_min);
  row("peer: memcpy 24 MiB, 1 thread", fmt::format("{:.1f} GB/s", bytes / memcpy_s / 1e9), "1.00x (peer)");
  row("layer_norm fwd (8192x768)", fmt::format("{:.1f} GB/s", bytes / ln_s / 1e9),
      fmt::format("{:.2f}x memcpy", memcpy_s / ln_s));
  return 0;
}

}  // namespace hetu::app
