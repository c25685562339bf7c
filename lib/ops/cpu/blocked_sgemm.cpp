// hetu's own f32 GEMM (blocked_sgemm.h): B packed per (KC × NC) block into NR-wide panels, A
// per MR-row micro-panel, an MR × NR register tile per microkernel call.
#include "lib/ops/cpu/blocked_sgemm.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "lib/ops/cpu/isa.h"
#include "lib/util/error.h"

namespace hetu::ops::cpu {

// Note [Blocked sgemm]: OpenBLAS 0.3.21 (its Cooperlake kernels on this AMD EPYC) packs both
// operands on every call; a perf of a GPT-2 4×256 training step (B·T = 1024, vocab 256) put
// 10% of the step in sgemm_{on,it,ot,in}copy beside 56% in sgemm_kernel. This GEMM packs less:
// a row-major operand is read in place (B: NR columns of a row per k step; A: MR rows, which
// stay in L1 while the microkernel sweeps the block's B panels), unless its rows are a
// multiple of 4 KiB apart (then the rows a kernel call reads share cache sets and evict each
// other: B is packed, A's MR rows copied to rows off that stride). A transposed B (the
// forward's Wᵀ), B's last partial panel, a transposed A and partial row blocks are packed,
// per block of up to KC × NC, into NR-wide panels and MR-row micro-panels. Each kernel call
// prefetches its c tile for writing before the k loop. The microkernel is plain GCC vector
// code (one template) compiled per ISA level: AVX-512 12 × 32 (24 zmm accumulators), AVX2 +
// FMA 6 × 16 (12 ymm), baseline 4 × 8 (SSE2, for the tests only); on this EPYC the AVX2 one
// runs at ~0.76× OpenBLAS. Each output element is summed over k in the same order whatever
// the thread count (threads split the MR-row blocks), so results are deterministic. A
// training step with it gives the same loss to 1e-6 relative (3.072754 vs 3.072751, 11 steps).
// Interleaved with cblas_sgemm on the step's GEMMs (`hetu bench ops`, "sgemm candidate" rows:
// thread CPU time, caches evicted) it runs at 0.9-1.1× OpenBLAS per shape (lowest: the m = 256
// weight gradients, 0.90-0.96×) and 0.97-1.01× on the step's mix; a whole step
// (scripts/bench/ab_step_cpu_time.sh) took 1.02× the CPU time with it. Not faster there; on a
// CPU OpenBLAS serves without AVX-512 kernels it is (Note [GEMM choice], gemm_choice.cpp).
namespace {

// k rows per block: 1024 keeps the linear layers' k in one block (c written once); with a
// transposed A (the weight gradients), 256 measured faster than 512 and 1024 (its packed
// micro-panel, 12 KiB, stays in L1 beside the B panel being read).
constexpr int64_t kKc = 1024, kKcTransA = 256;
constexpr int64_t kNc = 256;   // columns per B block
constexpr int64_t kAPad = 16;  // floats past kc between the rows of a copied A block

template <int W> struct Vec {
  typedef float type __attribute__((vector_size(W * 4)));
};

// One MR-row block against the packed B block: what every thread does for its rows.
struct RowBlock {
  const float* a;  // op(a)(ic, pc)
  int64_t lda;
  bool trans_a;
  bool a_in_place;  // read a full block of a row-major A in place
  int64_t rows;  // valid rows, <= MR
  int64_t kc;
  const float* bp;  // packed B block: panels of kc × NR
  const float* b;   // op(b)(pc, jc) read in place (full panels only) with row stride ldb; null: bp
  int64_t ldb;
  int64_t cols;     // valid columns of the block
  float* c;         // c(ic, jc)
  int64_t ldc;
  bool accumulate;
  float* ap;  // scratch for a packed A micro-panel, (kc + kAPad) × MR
};

// ap[p·MR + r] = op(a)(r, p), rows >= rows zero.
template <int MR> inline void pack_a(const RowBlock& r) {
  if (!r.trans_a) {
    for (int64_t i = 0; i < MR; ++i) {
      if (i >= r.rows) {
        for (int64_t p = 0; p < r.kc; ++p) r.ap[p * MR + i] = 0.f;
        continue;
      }
      const float* src = r.a + i * r.lda;
      for (int64_t p = 0; p < r.kc; ++p) r.ap[p * MR + i] = src[p];
    }
    return;
  }
  for (int64_t p = 0; p < r.kc; ++p) {
    const float* src = r.a + p * r.lda;
    float* dst = r.ap + p * MR;
    if (r.rows == MR) {
      std::memcpy(dst, src, MR * sizeof(float));
    } else {
      for (int64_t i = 0; i < MR; ++i) dst[i] = i < r.rows ? src[i] : 0.f;
    }
  }
}

// c (MR × W·NV, ldc) = A · bp (+ c when accumulate), over kc; bp's rows ldb apart. A is
// row-major at ap with rows lda apart (kInPlace) or a packed micro-panel (ap[p·MR + i]).
template <int W, int MR, int NV, bool kInPlace>
__attribute__((always_inline)) inline void microkernel(int64_t kc, const float* ap, int64_t lda, const float* bp,
                                                       int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  using vec = typename Vec<W>::type;
  vec acc[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = vec{};
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    __builtin_prefetch(c + i * ldc, 1);
    __builtin_prefetch(c + i * ldc + W * NV - 1, 1);
  }
  for (int64_t p = 0; p < kc; ++p) {
    vec b[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) std::memcpy(&b[v], bp + p * ldb + v * W, sizeof(vec));
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const float x = kInPlace ? ap[i * lda + p] : ap[p * MR + i];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] += b[v] * x;
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      float* out = c + i * ldc + v * W;
      vec sum = acc[i][v];
      if (accumulate) {
        vec old;
        std::memcpy(&old, out, sizeof(vec));
        sum += old;
      }
      std::memcpy(out, &sum, sizeof(vec));
    }
  }
}

// The panel sweep of row_block with A at ap (see microkernel).
template <int W, int MR, int NV, bool kInPlace>
inline void row_block_with(const RowBlock& r, const float* ap, int64_t lda) {
  constexpr int NR = W * NV;
  alignas(64) float tile[MR * NR];
  for (int64_t j0 = 0; j0 < r.cols; j0 += NR) {
    float* c = r.c + j0;
    const int64_t cols = std::min<int64_t>(NR, r.cols - j0);
    const bool in_place = r.b != nullptr && cols == NR;
    const float* bp = in_place ? r.b + j0 : r.bp + j0 * r.kc;
    const int64_t ldb = in_place ? r.ldb : NR;
    if (r.rows == MR && cols == NR) {
      microkernel<W, MR, NV, kInPlace>(r.kc, ap, lda, bp, ldb, c, r.ldc, r.accumulate);
      continue;
    }
    microkernel<W, MR, NV, kInPlace>(r.kc, ap, lda, bp, ldb, tile, NR, false);
    for (int64_t i = 0; i < r.rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) c[i * r.ldc + j] = (r.accumulate ? c[i * r.ldc + j] : 0.f) + tile[i * NR + j];
    }
  }
}

// One microkernel call per B panel, reading a full block of a row-major A in place (its MR
// rows stay in L1 across the panels) and packing any other first; edge tiles (fewer rows or
// columns) go through a full tile on the stack and only their valid part reaches c.
template <int W, int MR, int NV> inline void row_block(const RowBlock& r) {
  if (!r.trans_a && r.rows == MR) {
    if (r.a_in_place) {
      row_block_with<W, MR, NV, true>(r, r.a, r.lda);
      return;
    }
    // Rows 4 KiB apart: copied (a memcpy per row) to rows kAPad floats off that stride.
    const int64_t ld = r.kc + kAPad;
    for (int64_t i = 0; i < MR; ++i) {
      std::memcpy(r.ap + i * ld, r.a + i * r.lda, static_cast<size_t>(r.kc) * sizeof(float));
    }
    row_block_with<W, MR, NV, true>(r, r.ap, ld);
    return;
  }
  pack_a<MR>(r);
  row_block_with<W, MR, NV, false>(r, r.ap, 0);
}

#define HT_FLATTEN __attribute__((flatten))
HT_FLATTEN void row_block_baseline(const RowBlock& r) { row_block<4, 4, 2>(r); }
#if HT_HAVE_ISA_LEVELS
HT_FLATTEN HT_TARGET_AVX2 void row_block_avx2(const RowBlock& r) { row_block<8, 6, 2>(r); }
HT_FLATTEN HT_TARGET_AVX512 void row_block_avx512(const RowBlock& r) { row_block<16, 12, 2>(r); }
#endif
#undef HT_FLATTEN

struct Level {
  int64_t mr, nr;
  void (*run)(const RowBlock&);
};

Level level_kernel() {
#if HT_HAVE_ISA_LEVELS
  switch (isa_level()) {
    case IsaLevel::avx512: return {12, 32, row_block_avx512};
    case IsaLevel::avx2: return {6, 16, row_block_avx2};
    case IsaLevel::baseline: break;
  }
#endif
  return {4, 8, row_block_baseline};
}

// bp: panels of kc × nr, panel q holding op(b)(pc + p, jc + q·nr + t) at [q·kc·nr + p·nr + t],
// columns past n zero; from panel `first` on (the full ones before it are read in place).
void pack_b(bool trans_b, const float* b, int64_t ldb, int64_t pc, int64_t kc, int64_t jc, int64_t cols, int64_t nr,
            int64_t first, float* bp) {
  const int64_t panels = (cols + nr - 1) / nr;
#pragma omp parallel for schedule(static) if ((panels - first) * kc * nr > (int64_t{1} << 16))
  for (int64_t q = first; q < panels; ++q) {
    float* dst = bp + q * kc * nr;
    const int64_t j0 = jc + q * nr, valid = std::min(nr, jc + cols - j0);
    if (!trans_b) {
      for (int64_t p = 0; p < kc; ++p) {
        std::memcpy(dst + p * nr, b + (pc + p) * ldb + j0, static_cast<size_t>(valid) * sizeof(float));
        std::fill(dst + p * nr + valid, dst + (p + 1) * nr, 0.f);
      }
      continue;
    }
    for (int64_t t = 0; t < nr; ++t) {
      if (t >= valid) {
        for (int64_t p = 0; p < kc; ++p) dst[p * nr + t] = 0.f;
        continue;
      }
      const float* src = b + (j0 + t) * ldb + pc;
      for (int64_t p = 0; p < kc; ++p) dst[p * nr + t] = src[p];
    }
  }
}

// The calling thread's packing buffer `which` (0: B, 1: A), at least `count` floats. Kept for
// the thread's life and never cleared: packing writes every element a kernel then reads, and a
// fresh MiB per call would cost page faults and zeroing comparable to a small GEMM's packing.
float* scratch(int64_t count, int which) {
  thread_local std::vector<float> buffers[2];
  std::vector<float>& buffer = buffers[which];
  if (static_cast<int64_t>(buffer.size()) < count) buffer.resize(static_cast<size_t>(count));
  return buffer.data();
}

}  // namespace

void blocked_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                   const float* b, int64_t ldb, bool accumulate, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    if (!accumulate) {
      for (int64_t i = 0; i < m; ++i) std::fill_n(c + i * ldc, n, 0.f);
    }
    return;
  }
  const Level level = level_kernel();
  const int64_t block_k = trans_a ? kKcTransA : kKc;
  const int64_t kc_max = std::min(block_k, k), nc_max = std::min(kNc, n);
  float* bp = scratch(kc_max * ((nc_max + level.nr - 1) / level.nr) * level.nr, 0);
  const int64_t row_blocks = (m + level.mr - 1) / level.mr;
  const bool parallel = m * n * k > (int64_t{1} << 20) && omp_get_max_threads() > 1 && !omp_in_parallel();
  // A row-major b's full panels are read in place (its rows are already NR-contiguous), unless
  // its rows are a multiple of 4 KiB apart: then a panel's rows share cache sets and evict
  // each other between the row blocks that reuse it.
  auto apart_4k = [](int64_t ld) { return (ld * static_cast<int64_t>(sizeof(float))) % 4096 == 0; };
  const bool in_place = !trans_b && !apart_4k(ldb);
  const bool a_in_place = !trans_a && !apart_4k(lda);
  for (int64_t jc = 0; jc < n; jc += kNc) {
    const int64_t cols = std::min(kNc, n - jc);
    for (int64_t pc = 0; pc < k; pc += block_k) {
      const int64_t kc = std::min(block_k, k - pc);
      pack_b(trans_b, b, ldb, pc, kc, jc, cols, level.nr, in_place ? cols / level.nr : 0, bp);
#pragma omp parallel if (parallel)
      {
        float* ap = scratch((kc + kAPad) * level.mr, 1);
#pragma omp for schedule(static)
        for (int64_t blk = 0; blk < row_blocks; ++blk) {
          const int64_t ic = blk * level.mr;
          const float* a0 = trans_a ? a + pc * lda + ic : a + ic * lda + pc;
          level.run(RowBlock{a0, lda, trans_a, a_in_place, std::min(level.mr, m - ic), kc, bp,
                             in_place ? b + pc * ldb + jc : nullptr, ldb, cols, c + ic * ldc + jc, ldc,
                             accumulate || pc > 0, ap});
        }
      }
    }
  }
}

}  // namespace hetu::ops::cpu
