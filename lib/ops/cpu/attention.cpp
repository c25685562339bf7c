// CPU kernels for fused causal attention (see attention.h for layouts), tiled so the work is
// GEMMs on small blocks (OpenBLAS; single-threaded inside our OpenMP tasks).
// Forward: a block of Bq query rows walks the key blocks it can see; per block the scores
// S = Q Kᵀ (Bq×Bk) go through an online softmax (running max m, running sum l, the output
// block rescaled by exp(m_old - m_new)), then O += P V. out = O / l, lse = m + log l. Only
// one Bq×Bk score tile per thread exists at a time: never a T×T matrix.
// Backward (flash-attention style): per key block and query block, P = exp(S·scale - lse),
// dP = dO Vᵀ, dS = P ∘ (dP - delta)·scale with delta_t = Σ_d dout·out; dV += Pᵀ dO,
// dK += dSᵀ Q, dQ += dS K. Parallel over (batch, kv head): a task owns its dk/dv and the dq
// rows of its query heads, so nothing is shared.
#include "lib/ops/cpu/attention.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

namespace hetu::ops::cpu {
namespace {

constexpr int64_t kKeyBlock = 64;    // keys per score tile
constexpr int64_t kQueryBlock = 64;  // query rows per score tile

// C (m×n, ldc) = alpha · op(A) op(B) + beta · C, row-major.
template <typename T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b, int64_t ldb,
          T beta, T* c, int64_t ldc) {
  const auto opa = ta ? CblasTrans : CblasNoTrans, opb = tb ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, opa, opb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
                static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
  } else {
    cblas_dgemm(CblasRowMajor, opa, opb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
                static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
  }
}

template <typename T> T dot(const T* a, const T* b, int64_t n) {
  T acc = 0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

// One query block [t0, t0 + nq) of one head against its kv head (k, v are (Tk, D)); query t
// sits at position past + t and sees keys 0..past + t.
template <typename T>
void attend_block(T* out, T* lse, const T* q, const T* k, const T* v, int64_t t0, int64_t nq, int64_t past,
                  int64_t Tk, int64_t D, T scale, T* scores, T* row_max, T* row_sum) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  std::fill(out, out + nq * D, T(0));
  std::fill(row_max, row_max + nq, kNegInf);
  std::fill(row_sum, row_sum + nq, T(0));
  const int64_t key_end = std::min(Tk, past + t0 + nq);  // keys any row of the block sees
  for (int64_t j0 = 0; j0 < key_end; j0 += kKeyBlock) {
    const int64_t nk = std::min(kKeyBlock, key_end - j0);
    gemm<T>(false, true, nq, nk, D, scale, q, D, k + j0 * D, D, T(0), scores, nk);  // S = Q Kᵀ · scale
    for (int64_t r = 0; r < nq; ++r) {
      T* s = scores + r * nk;
      const int64_t visible = std::min(nk, past + t0 + r + 1 - j0);  // causal: keys j0 .. past + t
      if (visible <= 0) {
        std::fill(s, s + nk, T(0));
        continue;
      }
      T block_max = kNegInf;
      for (int64_t j = 0; j < visible; ++j) block_max = std::max(block_max, s[j]);
      const T new_max = std::max(row_max[r], block_max);
      const T correction = std::exp(row_max[r] - new_max);  // 0 on the row's first block
      T sum = 0;
      for (int64_t j = 0; j < visible; ++j) sum += s[j] = std::exp(s[j] - new_max);
      std::fill(s + visible, s + nk, T(0));
      row_sum[r] = row_sum[r] * correction + sum;
      row_max[r] = new_max;
      if (correction != T(1)) {
        T* o = out + r * D;
#pragma omp simd
        for (int64_t d = 0; d < D; ++d) o[d] *= correction;
      }
    }
    gemm<T>(false, false, nq, D, nk, T(1), scores, nk, v + j0 * D, D, T(1), out, D);  // O += P V
  }
  for (int64_t r = 0; r < nq; ++r) {
    const T inv = T(1) / row_sum[r];
    T* o = out + r * D;
#pragma omp simd
    for (int64_t d = 0; d < D; ++d) o[d] *= inv;
    lse[r] = row_max[r] + std::log(row_sum[r]);
  }
}

}  // namespace

template <typename scalar_t>
void attention_forward(scalar_t* out, scalar_t* lse, const scalar_t* q, const scalar_t* k, const scalar_t* v,
                       const AttentionDims& dims, double scale) {
  const int64_t B = dims.B, H = dims.H, Hkv = dims.Hkv, T = dims.T, D = dims.D;
  const int64_t group = H / Hkv;
  const int64_t Tk = dims.keys(), past = Tk - T;  // keys before the first query (KV cache)
  const int64_t query_blocks = (T + kQueryBlock - 1) / kQueryBlock;
  const int64_t tasks = B * H * query_blocks;
  const scalar_t s = static_cast<scalar_t>(scale);
  // Causal rows cost ∝ t, so later query blocks are heavier: dynamic scheduling.
#pragma omp parallel
  {
    std::vector<scalar_t> scores(kQueryBlock * kKeyBlock), row_max(kQueryBlock), row_sum(kQueryBlock);
#pragma omp for schedule(dynamic)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t bh = task / query_blocks;  // b * H + h
      const int64_t b = bh / H, h = bh % H;
      const int64_t kv_offset = (b * Hkv + h / group) * Tk * D;
      const int64_t t0 = (task % query_blocks) * kQueryBlock;
      const int64_t nq = std::min(kQueryBlock, T - t0);
      const int64_t row = bh * T + t0;
      attend_block(out + row * D, lse + row, q + row * D, k + kv_offset, v + kv_offset, t0, nq, past, Tk, D, s,
                   scores.data(), row_max.data(), row_sum.data());
    }
  }
}

template <typename scalar_t>
void attention_backward(scalar_t* dq, scalar_t* dk, scalar_t* dv, const scalar_t* dout, const scalar_t* q,
                        const scalar_t* k, const scalar_t* v, const scalar_t* out, const scalar_t* lse,
                        const AttentionDims& dims, double scale) {
  const int64_t B = dims.B, H = dims.H, Hkv = dims.Hkv, T = dims.T, D = dims.D;
  const int64_t group = H / Hkv;
  const int64_t rows = B * H * T;
  const scalar_t s = static_cast<scalar_t>(scale);

  // delta_t = Σ_d dout·out, one per query row; dq starts at 0 and collects every key block.
  std::vector<scalar_t> delta(static_cast<size_t>(rows));
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < rows; ++row) {
    delta[static_cast<size_t>(row)] = dot(dout + row * D, out + row * D, D);
    std::fill(dq + row * D, dq + (row + 1) * D, scalar_t(0));
  }

#pragma omp parallel
  {
    std::vector<scalar_t> p(kQueryBlock * kKeyBlock), dp(kQueryBlock * kKeyBlock);
#pragma omp for schedule(dynamic)
    for (int64_t bkv = 0; bkv < B * Hkv; ++bkv) {
      const int64_t b = bkv / Hkv, hkv = bkv % Hkv;
      const scalar_t* k_head = k + bkv * T * D;
      const scalar_t* v_head = v + bkv * T * D;
      scalar_t* dk_head = dk + bkv * T * D;
      scalar_t* dv_head = dv + bkv * T * D;
      std::fill(dk_head, dk_head + T * D, scalar_t(0));
      std::fill(dv_head, dv_head + T * D, scalar_t(0));
      for (int64_t j0 = 0; j0 < T; j0 += kKeyBlock) {
        const int64_t nk = std::min(kKeyBlock, T - j0);
        for (int64_t h = hkv * group; h < (hkv + 1) * group; ++h) {
          // Query blocks that see any key of this block: rows t >= j0.
          for (int64_t t0 = (j0 / kQueryBlock) * kQueryBlock; t0 < T; t0 += kQueryBlock) {
            const int64_t nq = std::min(kQueryBlock, T - t0);
            const int64_t row0 = (b * H + h) * T + t0;
            const scalar_t* q_blk = q + row0 * D;
            const scalar_t* dout_blk = dout + row0 * D;
            gemm<scalar_t>(false, true, nq, nk, D, s, q_blk, D, k_head + j0 * D, D, scalar_t(0), p.data(), nk);
            gemm<scalar_t>(false, true, nq, nk, D, scalar_t(1), dout_blk, D, v_head + j0 * D, D, scalar_t(0), dp.data(), nk);
            for (int64_t r = 0; r < nq; ++r) {
              const int64_t t = t0 + r;
              const int64_t visible = std::clamp<int64_t>(t + 1 - j0, 0, nk);
              const scalar_t row_lse = lse[row0 + r], row_delta = delta[static_cast<size_t>(row0 + r)];
              scalar_t* pr = p.data() + r * nk;
              scalar_t* dpr = dp.data() + r * nk;
              for (int64_t j = 0; j < visible; ++j) {
                pr[j] = std::exp(pr[j] - row_lse);
                dpr[j] = pr[j] * (dpr[j] - row_delta) * s;  // dS, scale folded in
              }
              std::fill(pr + visible, pr + nk, scalar_t(0));
              std::fill(dpr + visible, dpr + nk, scalar_t(0));
            }
            // dV += Pᵀ dO; dK += dSᵀ Q; dQ += dS K.
            gemm<scalar_t>(true, false, nk, D, nq, scalar_t(1), p.data(), nk, dout_blk, D, scalar_t(1), dv_head + j0 * D, D);
            gemm<scalar_t>(true, false, nk, D, nq, scalar_t(1), dp.data(), nk, q_blk, D, scalar_t(1), dk_head + j0 * D, D);
            gemm<scalar_t>(false, false, nq, D, nk, scalar_t(1), dp.data(), nk, k_head + j0 * D, D, scalar_t(1),
                           dq + row0 * D, D);
          }
        }
      }
    }
  }
}

#define HT_INSTANTIATE_ATTENTION(T)                                                                           \
  template void attention_forward<T>(T*, T*, const T*, const T*, const T*, const AttentionDims&, double);     \
  template void attention_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*, const T*, const T*, \
                                      const AttentionDims&, double);
HT_INSTANTIATE_ATTENTION(float)
HT_INSTANTIATE_ATTENTION(double)
#undef HT_INSTANTIATE_ATTENTION

}  // namespace hetu::ops::cpu
