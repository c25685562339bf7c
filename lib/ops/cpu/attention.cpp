// CPU kernels for fused causal attention (see attention.h for layouts), tiled so the work is
// GEMMs on small blocks (OpenBLAS; single-threaded inside our OpenMP tasks).
// Work is cut along documents (attention.h): query and key blocks start at a document's
// first token and never reach past its last, so keys of other documents are never touched.
// Forward: a block of Bq query rows takes the keys it can see in tiles of up to Bk; per tile
// the scores S = Q Kᵀ (Bq×Bk) go through an online softmax (running max m, running sum l, the
// output block rescaled by exp(m_old - m_new)), then O += P V. out = O / l, lse = m + log l.
// One Bq×Bk score tile per thread exists at a time: never a T×T matrix. The keys are read
// transposed (kᵀ, made once per call): Note [Attention forward tiles].
// Backward (flash-attention style): per key block and chunk of the query rows that see it,
// P = exp(S·scale - lse), dP = dO Vᵀ, dS = P ∘ (dP - delta)·scale with delta_t = Σ_d
// dout·out; dV += Pᵀ dO, dK += dSᵀ Q, dQ += dS K. Parallel over (document, kv head): a task
// owns the document's dk/dv rows and their dq rows of its query heads, so nothing is shared.
// Note [Attention backward tiles]: the backward's tiles are key-major (Sᵀ = K Qᵀ, nk × nq),
// so the two deep GEMMs (dV = Pᵀ dO, dK = dSᵀ Q, depth = the query chunk) take their tile
// as it lies (NN) and only dQ = dS K (depth = the key block, 32) reads it transposed.
// OpenBLAS runs a transposed A with beta = 1 on its general path, which packs both operands on
// every call; with query-major tiles (dV, dK as TN) that path and its packing took ~40% of a
// forward + backward profile at T = 256 (perf), for 2/7 of the FLOPs. Pᵀ = K Qᵀ and dPᵀ = V dOᵀ
// stay NT: as NN on qᵀ, doutᵀ transposed once per call (the forward's trick, Note [Attention
// forward tiles]) the backward took 1.03x (T = 64) and 1.2x (T = 256) the time (B 4, H 4, D 64).
// Operands are strided Heads views (attention.h): a block of rows is a BLAS matrix with
// leading dimension Heads::row, so q, k, v are read where the projection wrote them. The
// softmax loops use fast_exp and run at the CPU's widest vectors (run_isa; fast_math.h).
#include "lib/ops/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "lib/ops/cpu/fast_math.h"
#include "lib/ops/cpu/isa.h"
#include "lib/ops/cpu/matmul.h"

namespace hetu::ops::cpu {
namespace {

// Forward: query rows per task, and the most keys per score tile (longer documents: online
// softmax over tiles). Backward: keys per task step, and the most query rows per score tile.
// Note [Attention forward tiles]: S = Q Kᵀ with both operands D-contiguous is a row-major NT
// GEMM, which OpenBLAS (0.3.21, AVX-512) never gives its small-matrix kernels: it packs both
// operands on the general path (~83 GFLOP/s here against ~110 for the same shape as NN, one
// thread). So the forward first transposes every kv head's keys once (kᵀ: D rows × Tk keys,
// shared by all query blocks and the group's heads) and takes S = Q kᵀ as NN. OpenBLAS also
// leaves its small path once M·N·K > 10⁶, so a tile is at most 32 queries × 128 keys (D up to
// 244 stays under it), for S and for O += P V. 32-query blocks also halve the masked upper
// half of the diagonal tiles that 64-query blocks computed (T = 64: 1.5x the useful FLOPs
// instead of 2x). Measured together (B 4, H 4, D 64, one thread): 0.86x the time of 64 × 256
// NT tiles at T = 64 and at T = 256. What is left: ~79% GEMMs, ~14% the softmax loops, ~7%
// the key transpose (perf). In scripts/bench/cpu_train.sh's T = 256, V = 256 step the forward
// was ~4% of the samples, so this is worth ~0.5% of that step.
constexpr int64_t kQueryBlock = 32;
constexpr int64_t kKeyChunk = 128;
constexpr int64_t kKeyBlock = 32;
constexpr int64_t kQueryChunk = 256;

template <typename T> T dot(const T* a, const T* b, int64_t n) {
  T acc = 0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

// kt (D rows of Tk, leading dimension ldkt) = kᵀ for keys [0, Tk) of one kv head (k: Tk rows,
// leading dimension ldk), in 16-key panels so both sides stay in L1.
template <typename T> void transpose_keys(T* kt, int64_t ldkt, const T* k, int64_t ldk, int64_t Tk, int64_t D) {
  constexpr int64_t kPanel = 16;
  for (int64_t j0 = 0; j0 < Tk; j0 += kPanel) {
    const int64_t nj = std::min(kPanel, Tk - j0);
    for (int64_t d = 0; d < D; ++d) {
      T* dst = kt + d * ldkt + j0;
      for (int64_t j = 0; j < nj; ++j) dst[j] = k[(j0 + j) * ldk + d];
    }
  }
}

// One query block [t0, t0 + nq) of one head against its kv head: keys as kᵀ (D rows of Tk,
// leading dimension ldkeys; Note [Attention forward tiles]) when keys_transposed, else as k
// (Tk rows); v: Tk rows, leading dimension ldv;
// query t sits at position past + t and sees keys 0..past + t. q, out point at the block's
// first row (leading dimensions ldq, ldo); lse at its first entry. Keys come in chunks of up
// to kKeyChunk: up to that length one GEMM gives all the scores and there is nothing to
// rescale; the first chunk's GEMM writes out (beta 0), so out needs no zero-fill. Run through run_isa: the softmax loops vectorise (fast_exp), the GEMMs are
// OpenBLAS calls.
struct AttendBlock {
  template <typename T>
  static void run(T* out, int64_t ldo, T* lse, const T* q, int64_t ldq, const T* keys, int64_t ldkeys,
                  bool keys_transposed, const T* v, int64_t ldv, int64_t t0, int64_t nq, int64_t past, int64_t Tk, int64_t D, T scale, T* scores,
                  T* row_max, T* row_sum) {
    constexpr T kNegInf = -std::numeric_limits<T>::infinity();
    std::fill(row_max, row_max + nq, kNegInf);
    std::fill(row_sum, row_sum + nq, T(0));
    const int64_t key_end = std::min(Tk, past + t0 + nq);  // keys any row of the block sees
    for (int64_t j0 = 0; j0 < key_end; j0 += kKeyChunk) {
      const int64_t nk = std::min(kKeyChunk, key_end - j0);
      if (keys_transposed) {  // S = Q Kᵀ · scale
        gemm<T>(false, false, nq, nk, D, scale, q, ldq, keys + j0, ldkeys, T(0), scores, nk);
      } else {
        gemm<T>(false, true, nq, nk, D, scale, q, ldq, keys + j0 * ldkeys, ldkeys, T(0), scores, nk);
      }
      for (int64_t r = 0; r < nq; ++r) {
        T* s = scores + r * nk;
        const int64_t visible = std::min(nk, past + t0 + r + 1 - j0);  // causal: keys j0 .. past + t
        if (visible <= 0) {  // only in a later chunk: out already holds this row
          std::fill(s, s + nk, T(0));
          continue;
        }
        const T block_max = max_of(s, visible, kNegInf);
        const T new_max = std::max(row_max[r], block_max);
        const T correction = fast_exp(row_max[r] - new_max);  // 0 on the row's first chunk
        T sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int64_t j = 0; j < visible; ++j) {
          const T e = fast_exp(s[j] - new_max);
          s[j] = e;
          sum += e;
        }
        std::fill(s + visible, s + nk, T(0));
        row_sum[r] = row_sum[r] * correction + sum;
        row_max[r] = new_max;
        if (j0 > 0 && correction != T(1)) {
          T* o = out + r * ldo;
#pragma omp simd
          for (int64_t d = 0; d < D; ++d) o[d] *= correction;
        }
      }
      gemm<T>(false, false, nq, D, nk, T(1), scores, nk, v + j0 * ldv, ldv, j0 == 0 ? T(0) : T(1), out,
              ldo);  // O (+)= P V
    }
    for (int64_t r = 0; r < nq; ++r) {
      const T inv = T(1) / row_sum[r];
      T* o = out + r * ldo;
#pragma omp simd
      for (int64_t d = 0; d < D; ++d) o[d] *= inv;
      lse[r] = row_max[r] + std::log(row_sum[r]);
    }
  }
};

// The backward of one (batch, kv head): its dk, dv rows and the dq rows of its query heads.
template <typename T>
struct BackwardArgs {
  Heads<T> dq, dk, dv;
  Heads<const T> dout, q, k, v;
  const T* lse;
  const T* delta;
  AttentionDims dims;
  T scale;
};

// One document's rows of one kv head: all of their dk, dv and the dq of the group's query
// heads. Positions i0, j0 count from the document's first token. Per block of kKeyBlock keys,
// the query rows that see them (t >= j0) in chunks of up to kQueryChunk: Pᵀ and dSᵀ of the
// chunk (recomputed from q, k, lse; key-major, Note [Attention backward tiles]), then
// dV += Pᵀ dO and dK += dSᵀ Q (GEMMs as deep as the chunk) and dQ += dS K. No zero-fills:
// the group's first head writes (beta 0) each key block's dk, dv on its first chunk, and key
// block 0, which every query sees, writes dq.
struct BackwardTask {
  template <typename T>
  static void run(const BackwardArgs<T>* a, const AttentionDocument* doc, int64_t hkv, T* p, T* dp) {
    const int64_t H = a->dims.H, T_len = a->dims.T, D = a->dims.D, group = H / a->dims.Hkv;
    const int64_t b = doc->b, first = doc->start, n = doc->length;
    const T s = a->scale;
    for (int64_t h = hkv * group; h < (hkv + 1) * group; ++h) {
      for (int64_t j0 = 0; j0 < n; j0 += kKeyBlock) {
        const int64_t nk = std::min(kKeyBlock, n - j0);
        const T* k_blk = a->k.at(b, hkv, first + j0);
        const T* v_blk = a->v.at(b, hkv, first + j0);
        T* dk_blk = a->dk.at(b, hkv, first + j0);
        T* dv_blk = a->dv.at(b, hkv, first + j0);
        for (int64_t i0 = j0; i0 < n; i0 += kQueryChunk) {
          const int64_t nq = std::min(kQueryChunk, n - i0);
          const int64_t row0 = (b * H + h) * T_len + first + i0;
          const T* q_rows = a->q.at(b, h, first + i0);
          const T* dout_rows = a->dout.at(b, h, first + i0);
          // Transposed tiles (key-major, nk × nq), so dV and dK are plain NN GEMMs.
          gemm<T>(false, true, nk, nq, D, s, k_blk, a->k.row, q_rows, a->q.row, T(0), p, nq);
          gemm<T>(false, true, nk, nq, D, T(1), v_blk, a->v.row, dout_rows, a->dout.row, T(0), dp, nq);
          const T* lse_rows = a->lse + row0;
          const T* delta_rows = a->delta + row0;
          for (int64_t c = 0; c < nk; ++c) {
            const int64_t hidden = std::max<int64_t>(j0 + c - i0, 0);  // queries before key j0 + c
            T* pc = p + c * nq;
            T* dpc = dp + c * nq;
            std::fill(pc, pc + hidden, T(0));
            std::fill(dpc, dpc + hidden, T(0));
#pragma omp simd
            for (int64_t r = hidden; r < nq; ++r) {
              const T pj = fast_exp(pc[r] - lse_rows[r]);
              pc[r] = pj;
              dpc[r] = pj * (dpc[r] - delta_rows[r]) * s;  // dS, scale folded in
            }
          }
          const T kv_beta = h == hkv * group && i0 == j0 ? T(0) : T(1);
          gemm<T>(false, false, nk, D, nq, T(1), p, nq, dout_rows, a->dout.row, kv_beta, dv_blk, a->dv.row);
          gemm<T>(false, false, nk, D, nq, T(1), dp, nq, q_rows, a->q.row, kv_beta, dk_blk, a->dk.row);
          gemm<T>(true, false, nq, D, nk, T(1), dp, nq, k_blk, a->k.row, j0 == 0 ? T(0) : T(1),
                  a->dq.at(b, h, first + i0), a->dq.row);
        }
      }
    }
  }
};

// A forward task: query rows [t0, t0 + kQueryBlock) of one document (t0 counts from its start).
struct QueryBlock {
  const AttentionDocument* doc;
  int64_t t0;
};

}  // namespace

template <typename scalar_t>
void attention_forward(Heads<scalar_t> out, scalar_t* lse, Heads<const scalar_t> q, Heads<const scalar_t> k,
                       Heads<const scalar_t> v, const AttentionDims& dims, std::span<const AttentionDocument> docs,
                       double scale) {
  const int64_t H = dims.H, Hkv = dims.Hkv, T = dims.T, D = dims.D, Tk = dims.keys();
  const int64_t group = H / Hkv;
  const int64_t past = Tk - T;  // keys before the first query (KV cache; then one document per row)
  // kᵀ of every (batch row, kv head): D rows of Tk keys (Note [Attention forward tiles]), once
  // a row has a full query block to share it; fewer queries (decoding with a KV cache) read k
  // as it lies, since the copy would cost as much as their GEMMs.
  const bool keys_transposed = T >= kQueryBlock;
  const int64_t ldkt = Tk;
  const auto kt = std::make_unique_for_overwrite<scalar_t[]>(
      keys_transposed ? static_cast<size_t>(dims.B * Hkv * D * ldkt) : size_t{0});
  auto kt_of = [&](int64_t b, int64_t hkv) { return kt.get() + (b * Hkv + hkv) * D * ldkt; };
  std::vector<QueryBlock> blocks;
  for (const AttentionDocument& doc : docs) {
    for (int64_t t0 = 0; t0 < doc.length; t0 += kQueryBlock) blocks.push_back({&doc, t0});
  }
  // A block's cost grows with its last position: heaviest first, then dynamic scheduling.
  std::stable_sort(blocks.begin(), blocks.end(), [](const QueryBlock& x, const QueryBlock& y) { return x.t0 > y.t0; });
  const int64_t tasks = static_cast<int64_t>(blocks.size()) * H;
  const scalar_t s = static_cast<scalar_t>(scale);
#pragma omp parallel
  {
    std::vector<scalar_t> scores(kQueryBlock * kKeyChunk), row_max(kQueryBlock), row_sum(kQueryBlock);
#pragma omp for schedule(static)
    for (int64_t bh = 0; bh < (keys_transposed ? dims.B * Hkv : 0); ++bh) {
      transpose_keys(kt_of(bh / Hkv, bh % Hkv), ldkt, k.at(bh / Hkv, bh % Hkv, 0), k.row, Tk, D);
    }
#pragma omp for schedule(dynamic)
    for (int64_t task = 0; task < tasks; ++task) {
      const QueryBlock& blk = blocks[static_cast<size_t>(task / H)];
      const int64_t h = task % H, hkv = h / group;
      const int64_t b = blk.doc->b, first = blk.doc->start, t0 = blk.t0;
      const int64_t nq = std::min(kQueryBlock, blk.doc->length - t0);
      run_isa<AttendBlock>(out.at(b, h, first + t0), out.row, lse + (b * H + h) * T + first + t0,
                           q.at(b, h, first + t0), q.row,
                           keys_transposed ? kt_of(b, hkv) + first : k.at(b, hkv, first),
                           keys_transposed ? ldkt : k.row, keys_transposed, v.at(b, hkv, first), v.row, t0,
                           nq, past, past + blk.doc->length, D, s, scores.data(), row_max.data(), row_sum.data());
    }
  }
}

template <typename scalar_t>
void attention_backward(Heads<scalar_t> dq, Heads<scalar_t> dk, Heads<scalar_t> dv, Heads<const scalar_t> dout,
                        Heads<const scalar_t> q, Heads<const scalar_t> k, Heads<const scalar_t> v,
                        Heads<const scalar_t> out, const scalar_t* lse, const AttentionDims& dims,
                        std::span<const AttentionDocument> docs, double scale) {
  const int64_t B = dims.B, H = dims.H, Hkv = dims.Hkv, T = dims.T, D = dims.D;
  const int64_t rows = B * H * T;  // query rows, numbered (b·H + h)·T + t like lse
  const scalar_t s = static_cast<scalar_t>(scale);

  // delta_t = Σ_d dout·out, one per query row.
  std::vector<scalar_t> delta(static_cast<size_t>(rows));
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t b = row / (H * T), h = row / T % H, t = row % T;
    delta[static_cast<size_t>(row)] = dot(dout.at(b, h, t), out.at(b, h, t), D);
  }

  const BackwardArgs<scalar_t> args{dq, dk, dv, dout, q, k, v, lse, delta.data(), dims, s};
#pragma omp parallel
  {
    std::vector<scalar_t> p(kQueryChunk * kKeyBlock), dp(kQueryChunk * kKeyBlock);
    const int64_t tasks = static_cast<int64_t>(docs.size()) * Hkv;
#pragma omp for schedule(dynamic)
    for (int64_t task = 0; task < tasks; ++task) {
      run_isa<BackwardTask>(&args, &docs[static_cast<size_t>(task / Hkv)], task % Hkv, p.data(), dp.data());
    }
  }
}

#define HT_INSTANTIATE_ATTENTION(T)                                                                          \
  template void attention_forward<T>(Heads<T>, T*, Heads<const T>, Heads<const T>, Heads<const T>,           \
                                     const AttentionDims&, std::span<const AttentionDocument>, double);     \
  template void attention_backward<T>(Heads<T>, Heads<T>, Heads<T>, Heads<const T>, Heads<const T>,          \
                                      Heads<const T>, Heads<const T>, Heads<const T>, const T*, const AttentionDims&, \
                                      std::span<const AttentionDocument>, double);
HT_INSTANTIATE_ATTENTION(float)
HT_INSTANTIATE_ATTENTION(double)
#undef HT_INSTANTIATE_ATTENTION

}  // namespace hetu::ops::cpu
