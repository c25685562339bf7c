// The tables of `hetu bench ops` (op_benchmarks.h).
#include "lib/bench/op_benchmarks.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <span>
#include <vector>
#include <fmt/core.h>

#include "lib/core/cuda_probe.h"
#include "lib/core/cuda_runtime.h"
#include "lib/core/tensor_random.h"
#include "lib/ops/cpu/blocked_sgemm.h"
#include "lib/ops/cpu/isa.h"
#include "lib/ops/ops.h"

#include "lib/bench/sgemm_candidate.h"

namespace hetu::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Seconds per call: the best of `reps` batches; a batch runs fn `calls` times between two
// `sync` calls, `calls` doubled from 1 until a batch lasts min_seconds.
double time_call(const std::function<void()>& fn, const std::function<void()>& sync, double min_seconds,
                 int reps = 3) {
  auto batch = [&](int64_t calls) {
    sync();
    const auto start = Clock::now();
    for (int64_t i = 0; i < calls; ++i) fn();
    sync();
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  batch(1);  // warm-up: page faults, thread pools, cuBLAS handles, allocator caches
  int64_t calls = 1;
  double elapsed = batch(calls);
  while (elapsed < min_seconds) elapsed = batch(calls *= 2);
  double best = elapsed / static_cast<double>(calls);
  for (int r = 1; r < reps; ++r) best = std::min(best, batch(calls) / static_cast<double>(calls));
  return best;
}

void row(const std::string& name, const std::string& value, const std::string& ratio) {
  std::fputs(fmt::format("{:<48} {:>16} {:>24}\n", name, value, ratio).c_str(), stdout);
}

std::string gflops_text(double gflops) {
  return gflops >= 1000 ? fmt::format("{:.1f} TFLOP/s", gflops / 1000) : fmt::format("{:.1f} GFLOP/s", gflops);
}

// Where and in what dtype the benchmark runs, and its tensors.
struct Bench {
  Device device;
  DType dtype;
  double t_min;
  std::function<void()> sync;

  Tensor random(const Shape& shape, uint64_t seed) const {
    return random_uniform(shape, seed, "bench", -1.0, 1.0).to(dtype).to(device);
  }
  double time(const std::function<void()>& fn) const { return time_call(fn, sync, t_min); }
};

// Targets of a (rows, vocab) cross-entropy: one per row, spread over the classes.
Tensor bench_targets(int64_t rows, int64_t vocab, Device device) {
  Tensor t = empty({rows}, DType::i64);
  for (int64_t i = 0; i < rows; ++i) t.data<int64_t>()[i] = (i * 7919) % vocab;
  return t.to(device);
}

// The cross-entropy passes of one vocabulary shard holding the whole vocabulary (the work
// of each rank of a vocab-parallel head, per column): the statistics pass reads the logits
// once, the backward reads them and writes the gradient. `copy_gbps` is the memory peer.
void cross_entropy_rows(const Bench& b, int64_t rows, int64_t vocab, double copy_gbps, const std::string& peer) {
  // 64 random rows repeated: a GPU-sized tensor without generating every value on the host.
  const int64_t block = std::min<int64_t>(rows, 64);
  const Tensor logits =
      b.random({block, vocab}, 12).unsqueeze(0).expand({rows / block, block, vocab}).contiguous().reshape({rows, vocab});
  const Tensor targets = bench_targets(rows, vocab, b.device);
  const ops::CrossEntropyShardStats s = ops::cross_entropy_shard_stats(logits, targets, 0, vocab);
  const Tensor grad = full({rows}, 1.0 / static_cast<double>(rows), s.max.dtype(), b.device);
  const double bytes = static_cast<double>(logits.numel()) * static_cast<double>(dtype_size(b.dtype));
  const double stats_s = b.time([&] { ops::cross_entropy_shard_stats(logits, targets, 0, vocab); });
  const double bwd_s = b.time([&] { ops::cross_entropy_shard_backward(grad, logits, targets, s.max, s.sum_exp, 0, vocab); });
  const std::string shape = fmt::format("({}x{})", rows, vocab);
  row("cross_entropy_shard_stats " + shape, fmt::format("{:.1f} GB/s", bytes / stats_s / 1e9),
      fmt::format("{:.2f}x {}", bytes / stats_s / 1e9 / copy_gbps, peer));
  row("cross_entropy_shard_backward " + shape, fmt::format("{:.1f} GB/s", 2 * bytes / bwd_s / 1e9),
      fmt::format("{:.2f}x {}", 2 * bytes / bwd_s / 1e9 / copy_gbps, peer));
}

// Peak tensor bytes one call of fn adds on the bench's device (the allocator's peak counter).
size_t peak_bytes(const Bench& b, const std::function<void()>& fn) {
  b.sync();
  if (b.device.is_cuda()) {
    if constexpr (cuda::kBuilt) {
      const size_t before = cuda::memory_stats(b.device.index).allocated;
      cuda::reset_peak_memory_stats(b.device.index);
      fn();
      b.sync();
      return cuda::memory_stats(b.device.index).peak_allocated - before;
    }
  }
  const size_t before = cpu_memory_usage().in_use;
  reset_cpu_peak_memory();
  fn();
  return cpu_memory_usage().peak - before;
}

// The LM head and its loss, forward and both gradients (6·N·C·V FLOPs): the fused op
// (ops::linear_cross_entropy, one block of a tile of logits at a time) against the unfused reference
// (matmul to the (N, V) logits, cross-entropy, its gradient, two matmuls); time and peak bytes.
void lm_head_rows(const Bench& b, int64_t N, int64_t C, int64_t V) {
  const Tensor h = b.random({N, C}, 13), w = b.random({V, C}, 14);
  const Tensor targets = bench_targets(N, V, b.device);
  auto unfused = [&] {
    const Tensor logits = ops::matmul(h, w, false, true);
    int64_t count = 0;
    ops::cross_entropy_sum(logits, targets, -100, &count);
    const Tensor dlogits = ops::cross_entropy_backward(logits, targets, 1.0 / static_cast<double>(count));
    ops::matmul(dlogits, w);
    ops::matmul(dlogits, h, true, false);
  };
  auto fused = [&] { ops::linear_cross_entropy(h, w, targets, {}); };
  const double flops = 6.0 * static_cast<double>(N) * static_cast<double>(C) * static_cast<double>(V);
  const double unfused_s = b.time(unfused), fused_s = b.time(fused);
  const double unfused_mib = static_cast<double>(peak_bytes(b, unfused)) / (1 << 20);
  const double fused_mib = static_cast<double>(peak_bytes(b, fused)) / (1 << 20);
  const std::string shape = fmt::format("(N {} C {} V {})", N, C, V);
  row("lm head + loss unfused " + shape, fmt::format("{}, {:.0f} MiB", gflops_text(flops / unfused_s / 1e9), unfused_mib),
      "1.00x (peer)");
  const int64_t tile_rows = ops::linear_cross_entropy_chunk_rows(N, V, b.dtype, b.device);
  row(fmt::format("lm head + loss fused, {}-row tiles x {} columns", tile_rows,
                  ops::linear_cross_entropy_vocab_block(std::min(tile_rows, N), V, b.dtype, b.device)),
      fmt::format("{}, {:.0f} MiB", gflops_text(flops / fused_s / 1e9), fused_mib),
      fmt::format("{:.2f}x speed, {:.3f}x peak", unfused_s / fused_s, fused_mib / unfused_mib));
}

// The linear layer's backward with a bias (dx, dW and the bias column sums) at the shapes of
// scripts/bench/cpu_train.sh's GPT-2 (B·T = 1024 rows; c_attn 256 -> 768, attention c_proj
// 256 -> 256, MLP c_proj 1024 -> 256): ops::linear_backward against the reference ops (matmul,
// matmul, sum), timed alternately in `rounds` rounds (5; 1 with --quick); the ratio is the
// median of the rounds' ratios.
void linear_backward_rows(const Bench& b, int rounds) {
  for (const auto& [N, K] : {std::pair<int64_t, int64_t>{768, 256}, {256, 256}, {256, 1024}}) {
    const int64_t M = 1024;
    const Tensor g = b.random({M, N}, 21), x = b.random({M, K}, 22), w = b.random({N, K}, 23);
    auto reference = [&] {
      ops::matmul(g, w);
      ops::matmul(g, x, true, false);
      ops::sum(g, {0});
    };
    auto fused = [&] { ops::linear_backward(g, x, w, true); };
    std::vector<double> ratios;
    double fused_best = 1e30;
    for (int round = 0; round < rounds; ++round) {
      const double reference_s = b.time(reference), fused_s = b.time(fused);
      ratios.push_back(reference_s / fused_s);
      fused_best = std::min(fused_best, fused_s);
    }
    std::sort(ratios.begin(), ratios.end());
    const double flops = 4.0 * static_cast<double>(M * N * K);
    row(fmt::format("linear backward + bias ({}x{})->{}", M, K, N), gflops_text(flops / fused_best / 1e9),
        fmt::format("{:.3f}x matmul,matmul,sum", ratios[ratios.size() / 2]));
  }
}

// Causal attention forward and backward at (B, H, T, D): the forward does 2·B·H·T²·D useful
// FLOPs (QKᵀ and PV over the lower triangle); the backward does 2.5x that. Then the same
// batch packed with documents (cu_seqlens) of about T/3 tokens each: its forward's useful
// FLOPs are 2·H·D·Σ n² over the documents' lengths n, and its time relative to the unpacked
// batch shows whether the kernels skip the blocks across boundaries (ideal: Σ n² / (B·T²)).
void attention_rows(const Bench& b, int64_t B, int64_t H, int64_t T, int64_t D,
                    const std::function<std::string(double)>& vs_peak) {
  const Tensor q = b.random({B, H, T, D}, 5), k = b.random({B, H, T, D}, 6), v = b.random({B, H, T, D}, 7);
  const Tensor dout = b.random({B, H, T, D}, 8);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  struct Timing {
    double fwd_s, bwd_s;
  };
  auto measure = [&](std::span<const int64_t> cu) {
    const ops::AttentionResult fwd = ops::attention(q, k, v, scale, cu);
    return Timing{b.time([&] { ops::attention(q, k, v, scale, cu); }),
                  b.time([&] { ops::attention_backward(dout, q, k, v, fwd.out, fwd.lse, scale, cu); })};
  };
  const Timing plain = measure({});
  const double flops = 2.0 * static_cast<double>(B * H * T * T * D);
  const std::string shape = fmt::format("B{} H{} T{} D{} (causal)", B, H, T, D);
  row("attention fwd " + shape, gflops_text(flops / plain.fwd_s / 1e9), vs_peak(flops / plain.fwd_s / 1e9));
  // Peer of the forward kernel alone: per (b, h) the two GEMMs of its sizes, S = Q Kᵀ (T×T×D)
  // and O = P V (T×D×T), as plain single-thread sgemm over the whole square (no mask, no
  // softmax); its FLOP rate is the rate the forward's tiles would reach if they were free.
  if (b.dtype == DType::f32 && !b.device.is_cuda()) {
    const Tensor kt = b.random({T, D}, 9).transpose(0, 1).contiguous(), p = b.random({T, T}, 10);
    Tensor scores = empty({T, T}), o = empty({T, D});
    const float* qd = q.data<float>();
    const float* vd = v.data<float>();
    const int t = static_cast<int>(T), d = static_cast<int>(D);
    const int threads = ops::num_threads();
    openblas_set_num_threads(1);
    const double gemm_s = b.time([&] {
      for (int64_t bh = 0; bh < B * H; ++bh) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, t, d, 1.0f, qd + bh * T * D, d, kt.data<float>(), t,
                    0.0f, scores.data<float>(), t);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, d, t, 1.0f, p.data<float>(), t, vd + bh * T * D, d,
                    0.0f, o.data<float>(), d);
      }
    });
    ops::set_num_threads(threads);
    const double gemm_gflops = 2.0 * flops / gemm_s / 1e9;
    row(fmt::format("peer: sgemm QKt + PV of T{} D{}, 1 thread", T, D), gflops_text(gemm_gflops),
        fmt::format("fwd {:.2f}x its rate/thread", flops / plain.fwd_s / 1e9 / gemm_gflops / threads));
  }
  row("attention bwd " + shape, gflops_text(2.5 * flops / plain.bwd_s / 1e9), vs_peak(2.5 * flops / plain.bwd_s / 1e9));
  const double both = 3.5 * flops / (plain.fwd_s + plain.bwd_s) / 1e9;
  row("attention fwd+bwd " + shape, gflops_text(both), vs_peak(both));

  // Documents of T/3, T/3 - 1 and the rest in every row (odd lengths, boundaries off the blocks).
  std::vector<int64_t> cu{0};
  double squares = 0;
  for (int64_t r = 0; r < B; ++r) {
    const int64_t a = T / 3, c = std::max<int64_t>(T / 3 - 1, 0);
    for (int64_t n : {a, c, T - a - c}) {
      if (n == 0) continue;
      cu.push_back(cu.back() + n);
      squares += static_cast<double>(n * n);
    }
  }
  const Timing packed = measure(cu);
  const double packed_flops = 3.5 * 2.0 * static_cast<double>(H * D) * squares;
  const double packed_s = packed.fwd_s + packed.bwd_s, plain_s = plain.fwd_s + plain.bwd_s;
  row(fmt::format("attention fwd+bwd, documents of {}/{}/{} per row", T / 3, std::max<int64_t>(T / 3 - 1, 0),
                  T - T / 3 - std::max<int64_t>(T / 3 - 1, 0)),
      gflops_text(packed_flops / packed_s / 1e9),
      fmt::format("{}; {:.2f}x time (ideal {:.2f}x)", vs_peak(packed_flops / packed_s / 1e9), packed_s / plain_s,
                  squares / static_cast<double>(B * T * T)));
}

struct MatmulShape {
  std::string label;
  Shape a, b;
  bool tb;
};

void matmul_rows(const Bench& b, const std::vector<MatmulShape>& shapes,
                 const std::function<std::string(double)>& vs_peak) {
  for (const MatmulShape& s : shapes) {
    const Tensor x = b.random(s.a, 3), w = b.random(s.b, 4);
    const int64_t k = s.a.back();
    const int64_t n = s.tb ? s.b[0] : s.b.back();
    const double flops = 2.0 * static_cast<double>(shape_numel(s.a) / k) * static_cast<double>(k) * static_cast<double>(n);
    const double sec = b.time([&] { ops::matmul(x, w, false, s.tb); });
    row(s.label, gflops_text(flops / sec / 1e9), vs_peak(flops / sec / 1e9));
  }
}

}  // namespace

int run_cpu_op_benchmarks(const OpBenchOptions& options) {
  const Bench b{Device::cpu(), DType::f32, options.quick ? 0.05 : 0.3, [] {}};
  ops::set_num_threads(options.threads);
  const int threads = ops::num_threads();
  std::fputs(fmt::format("hetu bench ops: cpu, f32, {} thread(s){}; best of 3 x >= {:.2f} s\n\n", threads,
                         options.quick ? " (quick)" : "", b.t_min).c_str(), stdout);
  row("benchmark", "result", "ratio");

  // Peer: raw OpenBLAS sgemm on one thread, square 1024 (the machine's single-thread peak).
  const int64_t p = 1024;
  const Tensor pa = b.random({p, p}, 1), pb = b.random({p, p}, 2);
  Tensor pc = empty({p, p});
  openblas_set_num_threads(1);
  const int ip = static_cast<int>(p);
  const double peak_s = b.time([&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ip, ip, ip, 1.0f, pa.data<float>(), ip, pb.data<float>(), ip,
                0.0f, pc.data<float>(), ip);
  });
  const double openblas_peak = 2.0 * static_cast<double>(p * p * p) / peak_s / 1e9;
  // hetu's blocked sgemm on the same square, one thread: the peak is the faster of the two
  // (Note [GEMM choice]: on a CPU OpenBLAS serves without AVX-512 kernels ours is).
  double blocked_peak = 0;
  if (ops::cpu::isa_level() != ops::cpu::IsaLevel::baseline) {
    ops::set_num_threads(1);
    blocked_peak = 2.0 * static_cast<double>(p * p * p) / b.time([&] {
      ops::cpu::blocked_sgemm(false, false, p, p, p, pa.data<float>(), p, pb.data<float>(), p, false,
                              pc.data<float>(), p);
    }) / 1e9;
  }
  ops::set_num_threads(options.threads);
  const double peak = std::max(openblas_peak, blocked_peak);
  row("peer: OpenBLAS sgemm 1024^3, 1 thread", gflops_text(openblas_peak),
      openblas_peak >= blocked_peak ? "1.00x (peak)" : fmt::format("{:.2f}x peak", openblas_peak / peak));
  if (blocked_peak > 0) {
    row("peer: hetu blocked sgemm 1024^3, 1 thread", gflops_text(blocked_peak),
        blocked_peak > openblas_peak ? "1.00x (peak)" : fmt::format("{:.2f}x peak", blocked_peak / peak));
  }
  auto vs_peak = [&](double gflops) {
    return fmt::format("{:.2f}x peak, {:.2f}x/thread", gflops / peak, gflops / peak / threads);
  };
  matmul_rows(b,
              {{"matmul (512x512)@(512x512)", {512, 512}, {512, 512}, false},
               {"matmul linear (8x128x768)@(2304x768)^T", {8, 128, 768}, {2304, 768}, true},
               {"matmul linear (8x128x3072)@(768x3072)^T", {8, 128, 3072}, {768, 3072}, true},
               {"matmul batched (16x256x64)@(16x64x256)", {16, 256, 64}, {16, 64, 256}, false}},
              vs_peak);
  attention_rows(b, 4, 4, 64, 64, vs_peak);  // scripts/bench/cpu_train.sh's two lengths
  attention_rows(b, 4, 4, 256, 64, vs_peak);

  // layer_norm (8·1024 rows of 768): reads x, writes out -> 2·N·C·4 bytes; peer: memcpy.
  const int64_t rows = 8 * 1024, C = 768;
  const Tensor x = b.random({rows, C}, 9), w = b.random({C}, 10), bias = b.random({C}, 11);
  Tensor copy_dst = empty({rows, C});
  const double bytes = 2.0 * static_cast<double>(rows * C) * 4.0;
  const double memcpy_s = b.time([&] { std::memcpy(copy_dst.data<float>(), x.data<float>(), static_cast<size_t>(rows * C) * 4); });
  const double ln_s = b.time([&] { ops::layer_norm(x, w, bias, 1e-5); });
  row("peer: memcpy 24 MiB, 1 thread", fmt::format("{:.1f} GB/s", bytes / memcpy_s / 1e9), "1.00x (peer)");
  row("layer_norm fwd (8192x768)", fmt::format("{:.1f} GB/s", bytes / ln_s / 1e9),
      fmt::format("{:.2f}x memcpy", memcpy_s / ln_s));
  linear_backward_rows(b, options.quick ? 1 : 5);
  cross_entropy_rows(b, options.quick ? 64 : 256, 50304, bytes / memcpy_s / 1e9, "memcpy");
  lm_head_rows(b, options.quick ? 256 : 1024, 256, 50257);  // scripts/bench/cpu_train.sh's GPT-2 head
  sgemm_candidate_rows(1024, 256, 4, options.quick ? 5 : 31);  // cpu_train.sh's T = 256 rows: B·T = 1024
  return 0;
}

int run_cuda_op_benchmarks(const OpBenchOptions& options, Device device, DType dtype) {
  cuda::DeviceGuard guard(device);
  const Bench b{device, dtype, options.quick ? 0.05 : 0.2, [device] { cuda::synchronize(device.index); }};
  std::string name = "GPU";
  for (const CudaDeviceInfo& d : probe_cuda().devices) {
    if (d.index == device.index) name = fmt::format("{} (sm_{}{})", d.name, d.cc_major, d.cc_minor);
  }
  std::fputs(fmt::format("hetu bench ops: {} {}, {}{}; best of 3 batches >= {:.2f} s\n\n", device.str(), name,
                         to_string(dtype), options.quick ? " (quick)" : "", b.t_min).c_str(), stdout);
  row("benchmark", "result", "ratio");

  // Peer: hetu's matmul (cuBLAS) of a square 4096³ in the same dtype.
  const int64_t p = 4096;
  const Tensor pa = b.random({p, p}, 1), pb = b.random({p, p}, 2);
  const double peak = 2.0 * static_cast<double>(p * p * p) / b.time([&] { ops::matmul(pa, pb); }) / 1e9;
  row(fmt::format("peer: matmul 4096^3 {} (cuBLAS)", to_string(dtype)), gflops_text(peak), "1.00x (peak)");
  auto vs_peak = [&](double gflops) { return fmt::format("{:.2f}x peak", gflops / peak); };
  matmul_rows(b,
              {{"matmul linear (8x1024x768)@(2304x768)^T", {8, 1024, 768}, {2304, 768}, true},
               {"matmul linear (8x1024x768)@(3072x768)^T", {8, 1024, 768}, {3072, 768}, true},
               {"matmul linear (8x1024x3072)@(768x3072)^T", {8, 1024, 3072}, {768, 3072}, true},
               {"matmul lm head (8x1024x768)@(50304x768)^T", {8, 1024, 768}, {50304, 768}, true},
               {"matmul batched (96x1024x64)@(96x64x1024)", {96, 1024, 64}, {96, 64, 1024}, false}},
              vs_peak);
  attention_rows(b, 8, 12, 1024, 64, vs_peak);

  // Memory peer: a device-to-device copy; layer_norm (32·1024 rows of 768) moves 2·N·C elements.
  const int64_t rows = 32 * 1024, C = 768;
  const Tensor x = b.random({rows, C}, 9), w = b.random({C}, 10), bias = b.random({C}, 11);
  const Tensor copy_dst = empty({rows, C}, dtype, device);
  const double bytes = 2.0 * static_cast<double>(rows * C) * static_cast<double>(dtype_size(dtype));
  const double copy_s = b.time([&] { copy_dst.copy_from(x); });
  const double copy_gbps = bytes / copy_s / 1e9;
  row(fmt::format("peer: device copy {} MiB", static_cast<int64_t>(bytes / 2) >> 20), fmt::format("{:.1f} GB/s", copy_gbps),
      "1.00x (peer)");
  const double ln_s = b.time([&] { ops::layer_norm(x, w, bias, 1e-5); });
  row("layer_norm fwd (32768x768)", fmt::format("{:.1f} GB/s", bytes / ln_s / 1e9),
      fmt::format("{:.2f}x copy", copy_s / ln_s));
  cross_entropy_rows(b, options.quick ? 1024 : 8192, 50304, copy_gbps, "copy");
  lm_head_rows(b, options.quick ? 1024 : 8192, 768, 50304);  // GPT-2 124M's head
  return 0;
}

}  // namespace hetu::bench
