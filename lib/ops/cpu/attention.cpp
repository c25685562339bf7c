// CPU kernels for fused causal attention (see attention.h for layouts), tiled so the work is
// GEMMs on small blocks (OpenBLAS; single-threaded inside our OpenMP tasks).
// Work is cut along documents (attention.h): query and key blocks start at a document's
// first token and never reach past its last, so keys of other documents are never touched.
// Forward: a block of Bq query rows walks the key blocks it can see; per block the scores
// S = Q Kᵀ (Bq×Bk) go through an online softmax (running max m, running sum l, the output
// block rescaled by exp(m_old - m_new)), then O += P V. out = O / l, lse = m + log l. Only
// one Bq×Bk score tile per thread exists at a time: never a T×T matrix.
// Backward (flash-attention style): per key block and query block, P = exp(S·scale - lse),
// dP = dO Vᵀ, dS = P ∘ (dP - delta)·scale with delta_t = Σ_d dout·out; dV += Pᵀ dO,
// dK += dSᵀ Q, dQ += dS K. Parallel over (document, kv head): a task owns the document's dk/dv
// rows and their dq rows of its query heads, so nothing is shared.
// Operands are strided Heads views (attention.h): a block of rows is a BLAS matrix with
// leading dimension Heads::row, so q, k, v are read where the projection wrote them. The
// softmax loops use fast_exp and run at the CPU's widest vectors (run_isa; fast_math.h).
#include "lib/ops/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "lib/ops/cpu/fast_math.h"
#include "lib/ops/cpu/isa.h"
#include "lib/ops/cpu/matmul.h"

namespace hetu::ops::cpu {
namespace {

constexpr int64_t kKeyBlock = 64;    // keys per score tile
constexpr int64_t kQueryBlock = 64;  // query rows per score tile

template <typename T> T dot(const T* a, const T* b, int64_t n) {
  T acc = 0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

// One query block [t0, t0 + nq) of one head against its kv head (k, v: Tk rows with leading
// dimensions ldk, ldv); query t sits at position past + t and sees keys 0..past + t. q, out
// point at the block's first row (leading dimensions ldq, ldo); lse at its first entry.
// Run through run_isa: the softmax loops vectorise (fast_exp), the GEMMs are OpenBLAS calls.
struct AttendBlock {
  template <typename T>
  static void run(T* out, int64_t ldo, T* lse, const T* q, int64_t ldq, const T* k, int64_t ldk, const T* v,
                  int64_t ldv, int64_t t0, int64_t nq, int64_t past, int64_t Tk, int64_t D, T scale, T* scores,
                  T* row_max, T* row_sum) {
    constexpr T kNegInf = -std::numeric_limits<T>::infinity();
    for (int64_t r = 0; r < nq; ++r) std::fill(out + r * ldo, out + r * ldo + D, T(0));
    std::fill(row_max, row_max + nq, kNegInf);
    std::fill(row_sum, row_sum + nq, T(0));
    const int64_t key_end = std::min(Tk, past + t0 + nq);  // keys any row of the block sees
    for (int64_t j0 = 0; j0 < key_end; j0 += kKeyBlock) {
      const int64_t nk = std::min(kKeyBlock, key_end - j0);
      gemm<T>(false, true, nq, nk, D, scale, q, ldq, k + j0 * ldk, ldk, T(0), scores, nk);  // S = Q Kᵀ · scale
      for (int64_t r = 0; r < nq; ++r) {
        T* s = scores + r * nk;
        const int64_t visible = std::min(nk, past + t0 + r + 1 - j0);  // causal: keys j0 .. past + t
        if (visible <= 0) {
          std::fill(s, s + nk, T(0));
          continue;
        }
        T block_max = kNegInf;
#pragma omp simd reduction(max : block_max)
        for (int64_t j = 0; j < visible; ++j) block_max = std::max(block_max, s[j]);
        const T new_max = std::max(row_max[r], block_max);
        const T correction = fast_exp(row_max[r] - new_max);  // 0 on the row's first block
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
        if (correction != T(1)) {
          T* o = out + r * ldo;
#pragma omp simd
          for (int64_t d = 0; d < D; ++d) o[d] *= correction;
        }
      }
      gemm<T>(false, false, nq, D, nk, T(1), scores, nk, v + j0 * ldv, ldv, T(1), out, ldo);  // O += P V
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
// heads. Positions t0, j0 count from the document's first token.
struct BackwardTask {
  template <typename T>
  static void run(const BackwardArgs<T>* a, const AttentionDocument* doc, int64_t hkv, T* p, T* dp) {
    const int64_t H = a->dims.H, T_len = a->dims.T, D = a->dims.D, group = H / a->dims.Hkv;
    const int64_t b = doc->b, first = doc->start, n = doc->length;
    const T s = a->scale;
    for (int64_t t = first; t < first + n; ++t) {
      std::fill(a->dk.at(b, hkv, t), a->dk.at(b, hkv, t) + D, T(0));
      std::fill(a->dv.at(b, hkv, t), a->dv.at(b, hkv, t) + D, T(0));
    }
    for (int64_t j0 = 0; j0 < n; j0 += kKeyBlock) {
      const int64_t nk = std::min(kKeyBlock, n - j0);
      const T* k_blk = a->k.at(b, hkv, first + j0);
      const T* v_blk = a->v.at(b, hkv, first + j0);
      for (int64_t h = hkv * group; h < (hkv + 1) * group; ++h) {
        // Query blocks that see any key of this block: rows t >= j0.
        for (int64_t t0 = (j0 / kQueryBlock) * kQueryBlock; t0 < n; t0 += kQueryBlock) {
          const int64_t nq = std::min(kQueryBlock, n - t0);
          const int64_t row0 = (b * H + h) * T_len + first + t0;
          const T* q_blk = a->q.at(b, h, first + t0);
          const T* dout_blk = a->dout.at(b, h, first + t0);
          gemm<T>(false, true, nq, nk, D, s, q_blk, a->q.row, k_blk, a->k.row, T(0), p, nk);
          gemm<T>(false, true, nq, nk, D, T(1), dout_blk, a->dout.row, v_blk, a->v.row, T(0), dp, nk);
          for (int64_t r = 0; r < nq; ++r) {
            const int64_t visible = std::clamp<int64_t>(t0 + r + 1 - j0, 0, nk);
            const T row_lse = a->lse[row0 + r], row_delta = a->delta[row0 + r];
            T* pr = p + r * nk;
            T* dpr = dp + r * nk;
#pragma omp simd
            for (int64_t j = 0; j < visible; ++j) {
              const T pj = fast_exp(pr[j] - row_lse);
              pr[j] = pj;
              dpr[j] = pj * (dpr[j] - row_delta) * s;  // dS, scale folded in
            }
            std::fill(pr + visible, pr + nk, T(0));
            std::fill(dpr + visible, dpr + nk, T(0));
          }
          // dV += Pᵀ dO; dK += dSᵀ Q; dQ += dS K.
          gemm<T>(true, false, nk, D, nq, T(1), p, nk, dout_blk, a->dout.row, T(1), a->dv.at(b, hkv, first + j0),
                  a->dv.row);
          gemm<T>(true, false, nk, D, nq, T(1), dp, nk, q_blk, a->q.row, T(1), a->dk.at(b, hkv, first + j0),
                  a->dk.row);
          gemm<T>(false, false, nq, D, nk, T(1), dp, nk, k_blk, a->k.row, T(1), a->dq.at(b, h, first + t0),
                  a->dq.row);
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
  const int64_t H = dims.H, T = dims.T, D = dims.D;
  const int64_t group = H / dims.Hkv;
  const int64_t past = dims.keys() - T;  // keys before the first query (KV cache; then one document per row)
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
    std::vector<scalar_t> scores(kQueryBlock * kKeyBlock), row_max(kQueryBlock), row_sum(kQueryBlock);
#pragma omp for schedule(dynamic)
    for (int64_t task = 0; task < tasks; ++task) {
      const QueryBlock& blk = blocks[static_cast<size_t>(task / H)];
      const int64_t h = task % H, hkv = h / group;
      const int64_t b = blk.doc->b, first = blk.doc->start, t0 = blk.t0;
      const int64_t nq = std::min(kQueryBlock, blk.doc->length - t0);
      run_isa<AttendBlock>(out.at(b, h, first + t0), out.row, lse + (b * H + h) * T + first + t0,
                           q.at(b, h, first + t0), q.row, k.at(b, hkv, first), k.row, v.at(b, hkv, first), v.row, t0,
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

  // delta_t = Σ_d dout·out, one per query row; dq starts at 0 and collects every key block.
  std::vector<scalar_t> delta(static_cast<size_t>(rows));
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t b = row / (H * T), h = row / T % H, t = row % T;
    delta[static_cast<size_t>(row)] = dot(dout.at(b, h, t), out.at(b, h, t), D);
    scalar_t* dq_row = dq.at(b, h, t);
    std::fill(dq_row, dq_row + D, scalar_t(0));
  }

  const BackwardArgs<scalar_t> args{dq, dk, dv, dout, q, k, v, lse, delta.data(), dims, s};
#pragma omp parallel
  {
    std::vector<scalar_t> p(kQueryBlock * kKeyBlock), dp(kQueryBlock * kKeyBlock);
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
