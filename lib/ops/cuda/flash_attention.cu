// Fused causal attention with GQA for CUDA in the FlashAttention-2 structure (flash_attention.h):
// plain CUDA C++, f32 FMAs on shared-memory tiles (no tensor cores yet), f32 accumulation for
// f32 and bf16 inputs; the T×T scores never exist in global memory.
//
// Every kernel: 256 threads as a 16×16 grid, tx = threadIdx.x % 16 (fast), ty = threadIdx.x / 16.
// A thread owns the tile rows ty + 16·i and the columns tx + 16·j, so the 16 threads of one row
// are one half-warp and a row reduction is 4 xor-shuffles. Tiles live in dynamic shared memory
// as f32 (bf16 converted on load), zero-padded to full tiles and to kMaxD ∈ {32, 64, 128}
// columns (the smallest ≥ D), row stride kMaxD + 1 so column walks hit distinct banks.
// The zero padding matters: padded P/dS entries are 0 and must multiply 0, never garbage.
//
// Launches (blocks of 256 threads, 1-D grids; "a | b | c" is for kMaxD 32 | 64 | 128):
//   forward       grid ceil(T/64)·B·H: a block owns 64 query rows of head (b, h) and walks the
//                 key tiles they see, 64 | 64 | 32 keys each. Shared memory 33536 | 49920 | 57984 B.
//   backward_dq   grid ceil(T/32)·B·H: a block owns 32 query rows of (b, h) and walks key tiles
//                 of 64 | 32 | 32 keys. Shared memory 33664 | 37504 | 70272 B.
//   backward_dkv  grid ceil(Tk/N)·B·Hkv, N = 64 | 32 | 32: a block owns N keys of kv head (b, hkv)
//                 and walks the g = H/Hkv query heads that read it × their query tiles of 32 rows.
//                 Shared memory 42496 | 41984 | 74752 B.
// Over 48 KiB needs the opt-in attribute (set at every launch); on sm_75 (64 KiB per block) the
// kMaxD = 128 backward does not fit: flash_attention_supported says so, the caller uses cuBLAS.
// Work order: blocks are numbered heaviest first (causal: late query tiles, early key tiles).
//
// Forward per query tile: O = 0, m = -inf, l = 0; per key tile: S = scale·Q Kᵀ, masked to keys
// ≤ the query's position (Tk - T + t); m' = max(m, rowmax S); P = exp(S - m'); l = l·e^(m-m') +
// rowsum P; O = O·e^(m-m') + P V. Finally out = O / l, lse = m + log l.
// Backward (Di = rowsum(dO ∘ O) first, by attention_row_dot of attention.cu): P = exp(scale·Q Kᵀ -
// lse) (masked), dP = dO Vᵀ, dS = P ∘ (dP - Di) · scale; dQ = dS K; dK = dSᵀ Q; dV = Pᵀ dO.
// dQ and dK/dV come from two kernels that each recompute P (and dP): no atomics, so results are
// deterministic; dK/dV of a kv head sum its g query heads inside one block (a loop over them).
// Documents (AttentionShape::doc_start/doc_end): a query also masks keys before its document's
// start; query tiles start their key walk at their first row's document start, and a key tile
// walks query tiles only up to its last key's document end, so tiles across a boundary are
// skipped (the cost is about Σ n_i² plus the tiles a boundary cuts).
#include "lib/ops/cuda/flash_attention.h"

#include <climits>
#include <type_traits>

#include "lib/ops/cuda/attention_rows.h"
#include "lib/ops/cuda/common.cuh"

namespace hetu::ops::cuda {
namespace {

constexpr int kGrid = 16;                      // the thread grid is kGrid × kGrid
constexpr int kBlockThreads = kGrid * kGrid;   // 256

// Tile sizes per padded head dim, and the dynamic shared memory of each kernel.
template <int kMaxD> struct Config {
  static constexpr int kLd = kMaxD + 1;  // row stride of the (rows, kMaxD) tiles
  static constexpr int kFwdM = 64;       // forward: query rows per block
  static constexpr int kFwdN = kMaxD == 128 ? 32 : 64;  // forward: keys per step
  static constexpr int kBwdM = 32;       // backward: query rows per tile
  static constexpr int kBwdN = kMaxD == 32 ? 64 : 32;   // backward: keys per tile
  // forward: Q (kFwdM rows), K then V (kFwdN rows), P (kFwdM, kFwdN + 1).
  static constexpr size_t kForwardSmem = sizeof(float) * ((kFwdM + kFwdN) * kLd + kFwdM * (kFwdN + 1));
  // backward_dq: Q, dO (kBwdM rows), K, V (kBwdN rows), dS (kBwdM, kBwdN + 1).
  static constexpr size_t kDqSmem = sizeof(float) * (2 * (kBwdM + kBwdN) * kLd + kBwdM * (kBwdN + 1));
  // backward_dkv: K, V (kBwdN rows), Q, dO (kBwdM rows), Pᵀ, dSᵀ (kBwdN, kBwdM + 1), lse, Di.
  static constexpr size_t kDkvSmem =
      sizeof(float) * (2 * (kBwdM + kBwdN) * kLd + 2 * kBwdN * (kBwdM + 1) + 2 * kBwdM);
  static_assert(kMaxD % 32 == 0 && kFwdM % kGrid == 0 && kFwdN % kGrid == 0 && kBwdM % kGrid == 0 &&
                kBwdN % kGrid == 0, "tiles must split evenly over the thread grid");
};
static_assert(Config<32>::kForwardSmem == 33536 && Config<64>::kForwardSmem == 49920 &&
              Config<128>::kForwardSmem == 57984, "update the table at the top of the file");
static_assert(Config<32>::kDqSmem == 33664 && Config<64>::kDqSmem == 37504 && Config<128>::kDqSmem == 70272,
              "update the table at the top of the file");
static_assert(Config<32>::kDkvSmem == 42496 && Config<64>::kDkvSmem == 41984 && Config<128>::kDkvSmem == 74752,
              "update the table at the top of the file");

__host__ __device__ __forceinline__ int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
__host__ __device__ __forceinline__ int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The first key that query row t0 + r of batch row b may see: its document's start (0 without
// documents, and for rows past the tile's nq, which see nothing).
__device__ __forceinline__ int64_t doc_start_of(const AttentionShape& s, int64_t b, int64_t t0, int r, int nq) {
  return s.doc_start != nullptr && r < nq ? s.doc_start[b * s.T + t0 + r] : 0;
}

// Max / sum over the 16 lanes of a half-warp (the threads of one tile row). All 32 lanes call.
__device__ __forceinline__ float half_warp_max(float v) {
  for (int o = kGrid / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float half_warp_sum(float v) {
  for (int o = kGrid / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// dst (kRows, kMaxD), row stride kMaxD + 1, f32 = rows [0, n) × columns [0, D) of src (row
// stride D); every other element 0. All threads of the block call; a barrier must follow.
template <int kRows, int kMaxD, typename E>
__device__ __forceinline__ void load_tile(float* dst, const E* __restrict__ src, int n, int D) {
  for (int i = threadIdx.x; i < kRows * kMaxD; i += kBlockThreads) {
    const int r = i / kMaxD, d = i % kMaxD;
    dst[r * (kMaxD + 1) + d] = r < n && d < D ? to_float(src[static_cast<int64_t>(r) * D + d]) : 0.0f;
  }
}

// acc[i][j] = Σ_d a[i·16 rows][d] · b[j·16 rows][d] over the kMaxD columns of two tiles of
// row stride kMaxD + 1; a points at the thread's first row of A (ty), b at its first of B (tx).
template <int kRA, int kRB, int kMaxD>
__device__ __forceinline__ void tile_dot(float (&acc)[kRA][kRB], const float* a, const float* b) {
  constexpr int kStep = kGrid * (kMaxD + 1);
#pragma unroll
  for (int i = 0; i < kRA; ++i) {
#pragma unroll
    for (int j = 0; j < kRB; ++j) acc[i][j] = 0.0f;
  }
#pragma unroll 4
  for (int d = 0; d < kMaxD; ++d) {
    float av[kRA], bv[kRB];
#pragma unroll
    for (int i = 0; i < kRA; ++i) av[i] = a[i * kStep + d];
#pragma unroll
    for (int j = 0; j < kRB; ++j) bv[j] = b[j * kStep + d];
#pragma unroll
    for (int i = 0; i < kRA; ++i) {
#pragma unroll
      for (int j = 0; j < kRB; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
  }
}

// acc[i][kd] += Σ_c p[i·16 rows][c] · x[c][kd·16] for c < kCols: p points at the thread's first
// row (ty) of a tile of row stride ldp; x at column tx of a (kCols, kMaxD) tile of stride kMaxD + 1.
template <int kRA, int kCols, int kMaxD>
__device__ __forceinline__ void tile_matmul_add(float (&acc)[kRA][kMaxD / kGrid], const float* p, int ldp,
                                                const float* x) {
  constexpr int kRD = kMaxD / kGrid;
#pragma unroll 4
  for (int c = 0; c < kCols; ++c) {
    float pv[kRA];
#pragma unroll
    for (int i = 0; i < kRA; ++i) pv[i] = p[i * kGrid * ldp + c];
#pragma unroll
    for (int kd = 0; kd < kRD; ++kd) {
      const float xv = x[c * (kMaxD + 1) + kd * kGrid];
#pragma unroll
      for (int i = 0; i < kRA; ++i) acc[i][kd] = fmaf(pv[i], xv, acc[i][kd]);
    }
  }
}

// One block: query rows [t0, t0 + nq) of head (b, h); see the top of the file.
template <typename E, int kMaxD>
__global__ void __launch_bounds__(kBlockThreads)
    forward_kernel(E* __restrict__ out, float* __restrict__ lse, const E* __restrict__ q, const E* __restrict__ k,
                   const E* __restrict__ v, AttentionShape s, float scale) {
  using C = Config<kMaxD>;
  constexpr int kM = C::kFwdM, kN = C::kFwdN, kLd = C::kLd, kLdP = kN + 1;
  constexpr int kRM = kM / kGrid, kRN = kN / kGrid, kRD = kMaxD / kGrid;
  extern __shared__ float smem[];
  float* Qs = smem;            // (kM, kLd)
  float* KVs = Qs + kM * kLd;  // (kN, kLd): the key tile, then the value tile
  float* Ps = KVs + kN * kLd;  // (kM, kLdP)
  const int tx = threadIdx.x % kGrid, ty = threadIdx.x / kGrid;

  const int64_t tiles = ceil_div(s.T, kM);
  const int64_t bh = blockIdx.x / tiles;                       // b·H + h
  const int64_t t0 = (tiles - 1 - blockIdx.x % tiles) * kM;  // late (heavy) tiles first
  const int64_t b = bh / s.H, hkv = (bh % s.H) / (s.H / s.Hkv);
  const int nq = static_cast<int>(min64(kM, s.T - t0)), D = static_cast<int>(s.D);
  const int64_t past = s.Tk - s.T;  // keys before query 0 (KV cache)
  const int64_t row0 = bh * s.T + t0;
  const E* kh = k + (b * s.Hkv + hkv) * s.Tk * s.D;
  const E* vh = v + (b * s.Hkv + hkv) * s.Tk * s.D;
  load_tile<kM, kMaxD>(Qs, q + row0 * s.D, nq, D);

  float m[kRM], l[kRM], acc[kRM][kRD];
  int64_t first_key[kRM];  // the first key of each row's document
#pragma unroll
  for (int i = 0; i < kRM; ++i) {
    first_key[i] = doc_start_of(s, b, t0, ty + kGrid * i, nq);
    m[i] = -INFINITY;
    l[i] = 0.0f;
#pragma unroll
    for (int kd = 0; kd < kRD; ++kd) acc[i][kd] = 0.0f;
  }
  // Keys the block's queries see: from its first row's document start (the earliest) to
  // past + t0 + nq - 1 (≤ Tk - 1).
  const int64_t key_end = min64(s.Tk, past + t0 + nq);
  for (int64_t j0 = doc_start_of(s, b, t0, 0, nq); j0 < key_end; j0 += kN) {
    const int nk = static_cast<int>(min64(kN, key_end - j0));
    __syncthreads();  // every thread is done reading KVs (values) and Ps of the last step
    load_tile<kN, kMaxD>(KVs, kh + j0 * s.D, nk, D);
    __syncthreads();  // K (and, first time, Q) visible
    float sc[kRM][kRN];
    tile_dot<kRM, kRN, kMaxD>(sc, Qs + ty * kLd, KVs + tx * kLd);
#pragma unroll
    for (int i = 0; i < kRM; ++i) {
      const int r = ty + kGrid * i;
      const int64_t pos = past + t0 + r;  // this query sees keys 0 .. pos
      float mx = -INFINITY;
#pragma unroll
      for (int j = 0; j < kRN; ++j) {
        const int c = tx + kGrid * j;
        const bool valid = r < nq && c < nk && j0 + c <= pos && j0 + c >= first_key[i];
        sc[i][j] = valid ? sc[i][j] * scale : -INFINITY;
        mx = fmaxf(mx, sc[i][j]);
      }
      mx = half_warp_max(mx);
      const float m_new = fmaxf(m[i], mx);
      const float base = m_new == -INFINITY ? 0.0f : m_new;  // nothing visible yet: keep exp finite
      const float correction = expf(m[i] - base);           // 0 while m[i] is -inf
      float sum = 0.0f;
#pragma unroll
      for (int j = 0; j < kRN; ++j) {
        const float p = expf(sc[i][j] - base);  // masked: exp(-inf) = 0
        sum += p;
        Ps[r * kLdP + tx + kGrid * j] = p;
      }
      sum = half_warp_sum(sum);
      l[i] = l[i] * correction + sum;
      m[i] = m_new;
#pragma unroll
      for (int kd = 0; kd < kRD; ++kd) acc[i][kd] *= correction;
    }
    __syncthreads();  // every thread is done reading K; P is complete
    load_tile<kN, kMaxD>(KVs, vh + j0 * s.D, nk, D);
    __syncthreads();  // V visible
    tile_matmul_add<kRM, kN, kMaxD>(acc, Ps + ty * kLdP, kLdP, KVs + tx);
  }
#pragma unroll
  for (int i = 0; i < kRM; ++i) {
    const int r = ty + kGrid * i;
    if (r >= nq) continue;  // every row < nq saw key 0, so l[i] >= 1
    const float inv = 1.0f / l[i];
#pragma unroll
    for (int kd = 0; kd < kRD; ++kd) {
      const int d = tx + kGrid * kd;
      if (d < D) out[(row0 + r) * s.D + d] = from_float<E>(acc[i][kd] * inv);
    }
    if (tx == 0) lse[row0 + r] = m[i] + logf(l[i]);
  }
}

// One block: dq of query rows [t0, t0 + nq) of head (b, h), over the key tiles they see.
template <typename E, int kMaxD>
__global__ void __launch_bounds__(kBlockThreads)
    backward_dq_kernel(E* __restrict__ dq, const E* __restrict__ dout, const E* __restrict__ q,
                       const E* __restrict__ k, const E* __restrict__ v, const float* __restrict__ lse,
                       const float* __restrict__ Di, AttentionShape s, float scale) {
  using C = Config<kMaxD>;
  constexpr int kM = C::kBwdM, kN = C::kBwdN, kLd = C::kLd, kLdS = kN + 1;
  constexpr int kRM = kM / kGrid, kRN = kN / kGrid, kRD = kMaxD / kGrid;
  extern __shared__ float smem[];
  float* Qs = smem;             // (kM, kLd)
  float* dOs = Qs + kM * kLd;   // (kM, kLd)
  float* Ks = dOs + kM * kLd;   // (kN, kLd)
  float* Vs = Ks + kN * kLd;    // (kN, kLd)
  float* dSs = Vs + kN * kLd;   // (kM, kLdS)
  const int tx = threadIdx.x % kGrid, ty = threadIdx.x / kGrid;

  const int64_t tiles = ceil_div(s.T, kM);
  const int64_t bh = blockIdx.x / tiles;
  const int64_t t0 = (tiles - 1 - blockIdx.x % tiles) * kM;
  const int64_t b = bh / s.H, hkv = (bh % s.H) / (s.H / s.Hkv);
  const int nq = static_cast<int>(min64(kM, s.T - t0)), D = static_cast<int>(s.D);
  const int64_t past = s.Tk - s.T;
  const int64_t row0 = bh * s.T + t0;
  const E* kh = k + (b * s.Hkv + hkv) * s.Tk * s.D;
  const E* vh = v + (b * s.Hkv + hkv) * s.Tk * s.D;
  load_tile<kM, kMaxD>(Qs, q + row0 * s.D, nq, D);
  load_tile<kM, kMaxD>(dOs, dout + row0 * s.D, nq, D);
  float row_lse[kRM], row_di[kRM], acc[kRM][kRD];
  int64_t first_key[kRM];
#pragma unroll
  for (int i = 0; i < kRM; ++i) {
    const int r = ty + kGrid * i;
    first_key[i] = doc_start_of(s, b, t0, r, nq);
    row_lse[i] = r < nq ? lse[row0 + r] : 0.0f;
    row_di[i] = r < nq ? Di[row0 + r] : 0.0f;
#pragma unroll
    for (int kd = 0; kd < kRD; ++kd) acc[i][kd] = 0.0f;
  }
  const int64_t key_end = min64(s.Tk, past + t0 + nq);
  for (int64_t j0 = doc_start_of(s, b, t0, 0, nq); j0 < key_end; j0 += kN) {
    const int nk = static_cast<int>(min64(kN, key_end - j0));
    __syncthreads();  // every thread is done reading Ks and dSs of the last step
    load_tile<kN, kMaxD>(Ks, kh + j0 * s.D, nk, D);
    load_tile<kN, kMaxD>(Vs, vh + j0 * s.D, nk, D);
    __syncthreads();  // K, V (and, first time, Q, dO) visible
    float sc[kRM][kRN], dp[kRM][kRN];
    tile_dot<kRM, kRN, kMaxD>(sc, Qs + ty * kLd, Ks + tx * kLd);
    tile_dot<kRM, kRN, kMaxD>(dp, dOs + ty * kLd, Vs + tx * kLd);
#pragma unroll
    for (int i = 0; i < kRM; ++i) {
      const int r = ty + kGrid * i;
#pragma unroll
      for (int j = 0; j < kRN; ++j) {
        const int c = tx + kGrid * j;
        const bool valid = r < nq && c < nk && j0 + c <= past + t0 + r && j0 + c >= first_key[i];
        const float p = valid ? expf(sc[i][j] * scale - row_lse[i]) : 0.0f;
        dSs[r * kLdS + c] = p * (dp[i][j] - row_di[i]) * scale;
      }
    }
    __syncthreads();  // dS complete
    tile_matmul_add<kRM, kN, kMaxD>(acc, dSs + ty * kLdS, kLdS, Ks + tx);
  }
#pragma unroll
  for (int i = 0; i < kRM; ++i) {
    const int r = ty + kGrid * i;
    if (r >= nq) continue;
#pragma unroll
    for (int kd = 0; kd < kRD; ++kd) {
      const int d = tx + kGrid * kd;
      if (d < D) dq[(row0 + r) * s.D + d] = from_float<E>(acc[i][kd]);
    }
  }
}

// One block: dk, dv of keys [j0, j0 + nk) of kv head (b, hkv), summed over the g query heads
// that read it and over the query tiles that see those keys.
template <typename E, int kMaxD>
__global__ void __launch_bounds__(kBlockThreads)
    backward_dkv_kernel(E* __restrict__ dk, E* __restrict__ dv, const E* __restrict__ dout,
                        const E* __restrict__ q, const E* __restrict__ k, const E* __restrict__ v,
                        const float* __restrict__ lse, const float* __restrict__ Di, AttentionShape s, float scale) {
  using C = Config<kMaxD>;
  constexpr int kM = C::kBwdM, kN = C::kBwdN, kLd = C::kLd, kLdT = kM + 1;
  constexpr int kRN = kN / kGrid, kRM = kM / kGrid, kRD = kMaxD / kGrid;  // keys on ty, queries on tx
  extern __shared__ float smem[];
  float* Ks = smem;              // (kN, kLd)
  float* Vs = Ks + kN * kLd;     // (kN, kLd)
  float* Qs = Vs + kN * kLd;     // (kM, kLd)
  float* dOs = Qs + kM * kLd;    // (kM, kLd)
  float* Ps = dOs + kM * kLd;    // (kN, kLdT): P transposed, key-major
  float* dSs = Ps + kN * kLdT;   // (kN, kLdT): dS transposed
  float* lse_s = dSs + kN * kLdT;  // (kM)
  float* di_s = lse_s + kM;        // (kM)
  const int tx = threadIdx.x % kGrid, ty = threadIdx.x / kGrid;

  const int64_t tiles = ceil_div(s.Tk, kN);
  const int64_t bkv = blockIdx.x / tiles;  // b·Hkv + hkv
  const int64_t j0 = (blockIdx.x % tiles) * kN;  // early (heavy) tiles first
  const int64_t b = bkv / s.Hkv, hkv = bkv % s.Hkv, group = s.H / s.Hkv;
  const int nk = static_cast<int>(min64(kN, s.Tk - j0)), D = static_cast<int>(s.D);
  const int64_t past = s.Tk - s.T;
  const int64_t kv_row0 = bkv * s.Tk + j0;
  load_tile<kN, kMaxD>(Ks, k + kv_row0 * s.D, nk, D);
  load_tile<kN, kMaxD>(Vs, v + kv_row0 * s.D, nk, D);
  float dk_acc[kRN][kRD], dv_acc[kRN][kRD];
#pragma unroll
  for (int i = 0; i < kRN; ++i) {
#pragma unroll
    for (int kd = 0; kd < kRD; ++kd) dk_acc[i][kd] = dv_acc[i][kd] = 0.0f;
  }
  // Query t sees key j0 iff past + t >= j0: the first tile that can see this block's keys.
  // Queries past the document of the block's last key see none of its keys.
  const int64_t first_t0 = (j0 > past ? j0 - past : 0) / kM * kM;
  const int64_t query_end = s.doc_end != nullptr ? s.doc_end[b * s.T + j0 + nk - 1] : s.T;
  for (int64_t h = hkv * group; h < (hkv + 1) * group; ++h) {
    const int64_t bh = b * s.H + h;
    for (int64_t t0 = first_t0; t0 < query_end; t0 += kM) {
      const int nq = static_cast<int>(min64(kM, s.T - t0));
      const int64_t row0 = bh * s.T + t0;
      __syncthreads();  // every thread is done reading Qs, dOs, Ps, dSs, lse_s, di_s of the last step
      load_tile<kM, kMaxD>(Qs, q + row0 * s.D, nq, D);
      load_tile<kM, kMaxD>(dOs, dout + row0 * s.D, nq, D);
      for (int i = threadIdx.x; i < kM; i += kBlockThreads) {
        lse_s[i] = i < nq ? lse[row0 + i] : 0.0f;
        di_s[i] = i < nq ? Di[row0 + i] : 0.0f;
      }
      __syncthreads();  // Q, dO, lse, Di (and, first time, K, V) visible
      int64_t first_key[kRM];  // of each query column's document
#pragma unroll
      for (int j = 0; j < kRM; ++j) first_key[j] = doc_start_of(s, b, t0, tx + kGrid * j, nq);
      float sc[kRN][kRM], dp[kRN][kRM];
      tile_dot<kRN, kRM, kMaxD>(sc, Ks + ty * kLd, Qs + tx * kLd);
      tile_dot<kRN, kRM, kMaxD>(dp, Vs + ty * kLd, dOs + tx * kLd);
#pragma unroll
      for (int i = 0; i < kRN; ++i) {
        const int c = ty + kGrid * i;
#pragma unroll
        for (int j = 0; j < kRM; ++j) {
          const int r = tx + kGrid * j;
          const bool valid = c < nk && r < nq && j0 + c <= past + t0 + r && j0 + c >= first_key[j];
          const float p = valid ? expf(sc[i][j] * scale - lse_s[r]) : 0.0f;
          Ps[c * kLdT + r] = p;
          dSs[c * kLdT + r] = p * (dp[i][j] - di_s[r]) * scale;
        }
      }
      __syncthreads();  // Pᵀ, dSᵀ complete
      tile_matmul_add<kRN, kM, kMaxD>(dv_acc, Ps + ty * kLdT, kLdT, dOs + tx);
      tile_matmul_add<kRN, kM, kMaxD>(dk_acc, dSs + ty * kLdT, kLdT, Qs + tx);
    }
  }
#pragma unroll
  for (int i = 0; i < kRN; ++i) {
    const int c = ty + kGrid * i;
    if (c >= nk) continue;
#pragma unroll
    for (int kd = 0; kd < kRD; ++kd) {
      const int d = tx + kGrid * kd;
      if (d < D) {
        dk[(kv_row0 + c) * s.D + d] = from_float<E>(dk_acc[i][kd]);
        dv[(kv_row0 + c) * s.D + d] = from_float<E>(dv_acc[i][kd]);
      }
    }
  }
}

// Runs fn(std::integral_constant<int, kMaxD>) for the padded head dim of D (1 <= D <= 128).
template <typename Fn> void dispatch_dim(int64_t D, Fn&& fn) {
  if (D <= 32) return fn(std::integral_constant<int, 32>{});
  if (D <= 64) return fn(std::integral_constant<int, 64>{});
  return fn(std::integral_constant<int, 128>{});
}

size_t smem_bytes(int64_t D, bool backward) {
  size_t bytes = 0;
  dispatch_dim(D, [&](auto dim) {
    using C = Config<decltype(dim)::value>;
    bytes = backward ? (C::kDqSmem > C::kDkvSmem ? C::kDqSmem : C::kDkvSmem) : C::kForwardSmem;
  });
  return bytes;
}

template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), int64_t blocks, size_t smem, Args&&... args) {
  if (blocks > INT_MAX) throw_cuda_error(__FILE__, __LINE__, "flash_attention", "too many blocks for one grid");
  HT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  kernel<<<static_cast<unsigned>(blocks), kBlockThreads, smem, stream()>>>(static_cast<Args&&>(args)...);
  HT_CUDA_CHECK_LAUNCH();
}

void check_dim(int64_t D) {
  if (D < 1 || D > 128) throw_cuda_error(__FILE__, __LINE__, "flash_attention", "head dim must be in [1, 128]");
}

}  // namespace

bool flash_attention_supported(int64_t D, bool backward) {
  if (D < 1 || D > 128) return false;
  int device = 0, optin = 0;
  HT_CUDA_CHECK(cudaGetDevice(&device));
  HT_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  return smem_bytes(D, backward) <= static_cast<size_t>(optin);
}

void flash_attention_forward(DType dtype, const AttentionShape& s, float scale, const void* q, const void* k,
                             const void* v, void* out, float* lse) {
  if (s.B * s.H * s.T == 0) return;
  check_dim(s.D);
  dispatch_float(dtype, "attention", [&](auto tag) {
    using E = decltype(tag);
    dispatch_dim(s.D, [&](auto dim) {
      constexpr int kMaxD = decltype(dim)::value;
      using C = Config<kMaxD>;
      launch(forward_kernel<E, kMaxD>, ceil_div(s.T, C::kFwdM) * s.B * s.H, C::kForwardSmem, static_cast<E*>(out),
             lse, static_cast<const E*>(q), static_cast<const E*>(k), static_cast<const E*>(v), s, scale);
    });
  });
}

void flash_attention_backward(DType dtype, const AttentionShape& s, float scale, const void* dout, const void* q,
                              const void* k, const void* v, const void* out, const float* lse, void* dq, void* dk,
                              void* dv) {
  const int64_t rows = s.B * s.H * s.T;
  if (rows == 0) return;  // then dk, dv are empty as well (Hkv <= H, Tk == T)
  check_dim(s.D);
  Workspace di(static_cast<size_t>(rows) * sizeof(float));
  attention_row_dot(dtype, di.as<float>(), dout, out, rows, s.D);
  dispatch_float(dtype, "attention_backward", [&](auto tag) {
    using E = decltype(tag);
    dispatch_dim(s.D, [&](auto dim) {
      constexpr int kMaxD = decltype(dim)::value;
      using C = Config<kMaxD>;
      const float* Di = di.as<float>();
      launch(backward_dq_kernel<E, kMaxD>, ceil_div(s.T, C::kBwdM) * s.B * s.H, C::kDqSmem, static_cast<E*>(dq),
             static_cast<const E*>(dout), static_cast<const E*>(q), static_cast<const E*>(k),
             static_cast<const E*>(v), lse, Di, s, scale);
      launch(backward_dkv_kernel<E, kMaxD>, ceil_div(s.Tk, C::kBwdN) * s.B * s.Hkv, C::kDkvSmem,
             static_cast<E*>(dk), static_cast<E*>(dv), static_cast<const E*>(dout), static_cast<const E*>(q),
             static_cast<const E*>(k), static_cast<const E*>(v), lse, Di, s, scale);
    });
  });
}

}  // namespace hetu::ops::cuda
