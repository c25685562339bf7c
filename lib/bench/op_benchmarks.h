// The tables of `hetu bench ops`: throughput of hetu's kernels next to peers measured in the same run, so
// the ratios mean something on a shared, noisy machine. On the CPU (--device cpu, f32):
//  - matmul GFLOP/s at model-like shapes vs the faster of raw single-thread OpenBLAS sgemm and
//    hetu's blocked sgemm on a 1024³ square (the peak);
//  - fused causal attention forward, backward and both GFLOP/s (B=4, H=4, T=64 and 256, D=64)
//    vs that peak, the forward against plain sgemm of its two GEMMs' sizes (QKᵀ, PV), and the
//    same batch packed with three documents per row (cu_seqlens);
//  - layer_norm forward and the vocabulary-shard cross-entropy passes GB/s vs memcpy;
//  - the linear layer's backward with its bias (ops::linear_backward) vs the reference ops;
//  - the fused LM head + loss (forward and both gradients) vs the unfused ops: time and
//    peak tensor bytes (the allocator's peak counter);
//  - hetu's own blocked_sgemm vs cblas_sgemm, interleaved, on one GPT-2 step's linear GEMMs
//    (lib/bench/sgemm_candidate.h).
// On a GPU (--device cuda:N; --dtype f32 or bf16, both in turn without it) the same rows at
// GPT-2-124M-like sizes; the compute peer is hetu's matmul (cuBLAS) of a square 4096³ in the
// same dtype, the memory peer a device-to-device copy of the same bytes. Each timing is the
// best of 3 batches of calls between two device synchronisations, each batch lasting at least
// `min_seconds` (0.3 s on the CPU, 0.2 s on a GPU; 0.05 s with --quick).
//
//   run_cpu_op_benchmarks({.threads = 1, .quick = false});        // prints the CPU table
//   run_cuda_op_benchmarks({}, Device::cuda(0), DType::bf16);     // the GPU table in bf16
#pragma once

#include "lib/core/device.h"
#include "lib/core/dtype.h"

namespace hetu::bench {

struct OpBenchOptions {
  int threads = 0;     // 0: HETU_NUM_THREADS or every core
  bool quick = false;  // shorter timings (smoke test)
};

// The CPU table (f32) on stdout; 0.
int run_cpu_op_benchmarks(const OpBenchOptions& options);
// The table of one CUDA device in `dtype` (f32 or bf16) on stdout; 0.
int run_cuda_op_benchmarks(const OpBenchOptions& options, Device device, DType dtype);

}  // namespace hetu::bench
