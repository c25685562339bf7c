// CPU kernels for fused causal attention (see attention.h for layouts).
// Forward: each query row walks its keys 0..t in blocks of kKeyBlock with an online softmax
// (running max m, running sum l, accumulator rescaled by exp(m_old - m_new) when m grows);
// out = acc / l, lse = m + log l. Parallel over (batch, head, query block).
// Backward (flash-attention style): P = exp(q·k·scale - lse), delta_t = Σ_d dout·out,
// dS = P ∘ (dout·v - delta); dq = dS k·scale, dk = dSᵀ q·scale, dv = Pᵀ dout. Parallel over
// (batch, kv head): a thread owns its dk/dv rows and sums them over the head's query group.
#include "lib/ops/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace hetu::ops::cpu {
namespace {

constexpr int64_t kKeyBlock = 64;    // keys per online-softmax step (scores scratch per thread)
constexpr int64_t kQueryBlock = 32;  // query rows per forward task

template <typename T> T dot(const T* a, const T* b, int64_t n) {
  T acc = 0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

// y += alpha · x
template <typename T> void axpy(T* y, T alpha, const T* x, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

template <typename T> void scale_in_place(T* y, T alpha, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] *= alpha;
}

// One query row t against keys 0..t of one kv head (k, v are (T, D)). The accumulator is the
// output row itself.
template <typename T>
void attend_row(T* out, T* lse, const T* q, const T* k, const T* v, int64_t t, int64_t D, T scale) {
  T scores[kKeyBlock];
  T running_max = -std::numeric_limits<T>::infinity();
  T running_sum = 0;
  std::fill(out, out + D, T(0));
  for (int64_t j0 = 0; j0 <= t; j0 += kKeyBlock) {
    const int64_t n = std::min(kKeyBlock, t + 1 - j0);
    T block_max = -std::numeric_limits<T>::infinity();
    for (int64_t j = 0; j < n; ++j) {
      scores[j] = dot(q, k + (j0 + j) * D, D) * scale;
      block_max = std::max(block_max, scores[j]);
    }
    const T new_max = std::max(running_max, block_max);
    const T correction = std::exp(running_max - new_max);  // 0 on the first block
    running_sum *= correction;
    scale_in_place(out, correction, D);
    for (int64_t j = 0; j < n; ++j) {
      const T p = std::exp(scores[j] - new_max);
      running_sum += p;
      axpy(out, p, v + (j0 + j) * D, D);
    }
    running_max = new_max;
  }
  scale_in_place(out, T(1) / running_sum, D);
  *lse = running_max + std::log(running_sum);
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
#pragma omp parallel for schedule(dynamic)
  for (int64_t task = 0; task < tasks; ++task) {
    const int64_t bh = task / query_blocks;  // b * H + h
    const int64_t b = bh / H, h = bh % H;
    const int64_t kv_offset = (b * Hkv + h / group) * Tk * D;
    const int64_t t_end = std::min(T, (task % query_blocks + 1) * kQueryBlock);
    for (int64_t t = (task % query_blocks) * kQueryBlock; t < t_end; ++t) {
      const int64_t row = bh * T + t;
      attend_row(out + row * D, lse + row, q + row * D, k + kv_offset, v + kv_offset, past + t, D, s);
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

  // Key blocks outermost, so a block's k, v, dk, dv rows stay in cache while every query row
  // of the group at or after the block streams past.
#pragma omp parallel for schedule(dynamic)
  for (int64_t bkv = 0; bkv < B * Hkv; ++bkv) {
    const int64_t b = bkv / Hkv, hkv = bkv % Hkv;
    const scalar_t* k_head = k + bkv * T * D;
    const scalar_t* v_head = v + bkv * T * D;
    scalar_t* dk_head = dk + bkv * T * D;
    scalar_t* dv_head = dv + bkv * T * D;
    std::fill(dk_head, dk_head + T * D, scalar_t(0));
    std::fill(dv_head, dv_head + T * D, scalar_t(0));
    for (int64_t j0 = 0; j0 < T; j0 += kKeyBlock) {
      const int64_t j_end = std::min(T, j0 + kKeyBlock);
      for (int64_t h = hkv * group; h < (hkv + 1) * group; ++h) {
        for (int64_t t = j0; t < T; ++t) {
          const int64_t row = (b * H + h) * T + t;
          const scalar_t* q_row = q + row * D;
          const scalar_t* dout_row = dout + row * D;
          scalar_t* dq_row = dq + row * D;
          const scalar_t row_lse = lse[row], row_delta = delta[static_cast<size_t>(row)];
          for (int64_t j = j0; j < std::min(j_end, t + 1); ++j) {
            const scalar_t p = std::exp(dot(q_row, k_head + j * D, D) * s - row_lse);
            const scalar_t dp = dot(dout_row, v_head + j * D, D);
            const scalar_t ds = p * (dp - row_delta) * s;  // dS with the scale folded in
            axpy(dq_row, ds, k_head + j * D, D);
            axpy(dk_head + j * D, ds, q_row, D);
            axpy(dv_head + j * D, p, dout_row, D);
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
