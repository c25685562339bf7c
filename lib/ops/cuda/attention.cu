// Row kernels of the CUDA attention (attention_rows.h; the GEMMs are in attention.cpp).
// Launch: attention_softmax and attention_probs: one 256-thread block per score row (online
// max/sum over the unmasked prefix in f32); attention_row_dot: one warp per row, 8 rows per
// 256-thread block.
#include "lib/ops/cuda/attention_rows.h"
#include "lib/ops/cuda/common.cuh"

namespace hetu::ops::cuda {
namespace {

// Number of unmasked keys of a row: its position + 1.
__device__ __forceinline__ int64_t visible(int64_t row, int64_t T, int64_t Tk) { return Tk - T + row % T + 1; }
// Its first unmasked key: its document's start (rows of batch b are rows b·H·T ..).
__device__ __forceinline__ int64_t first_key(const Documents& docs, int64_t row, int64_t T) {
  return docs.start != nullptr ? docs.start[row / (docs.heads * T) * T + row % T] : 0;
}

template <typename P>
__global__ void softmax_kernel(P* probs, float* lse, const float* S, int64_t T, int64_t Tk, Documents docs) {
  __shared__ float shared[64];
  const int64_t row = blockIdx.x, n = visible(row, T, Tk), first = first_key(docs, row, T);
  const float* s = S + row * Tk;
  P* p = probs + row * Tk;
  MaxSum ms{-INFINITY, 0.0f};
  for (int64_t j = first + threadIdx.x; j < n; j += blockDim.x) ms = add_element(ms, s[j]);
  ms = block_max_sum(ms, shared);
  const float l = ms.m + logf(ms.s);
  for (int64_t j = threadIdx.x; j < Tk; j += blockDim.x) {
    p[j] = from_float<P>(j >= first && j < n ? expf(s[j] - l) : 0.0f);
  }
  if (threadIdx.x == 0) lse[row] = l;
}

template <typename P>
__global__ void probs_kernel(P* probs, const float* S, const float* lse, const float* dP, const float* Di, int64_t T,
                             int64_t Tk, Documents docs) {
  const int64_t row = blockIdx.x, n = visible(row, T, Tk), first = first_key(docs, row, T);
  const float l = lse[row];
  const float d = dP != nullptr ? Di[row] : 0.0f;
  for (int64_t j = threadIdx.x; j < Tk; j += blockDim.x) {
    float v = 0.0f;
    if (j >= first && j < n) {
      v = expf(S[row * Tk + j] - l);
      if (dP != nullptr) v *= dP[row * Tk + j] - d;
    }
    probs[row * Tk + j] = from_float<P>(v);
  }
}

template <typename T> __global__ void row_dot_kernel(float* Di, const T* a, const T* b, int64_t rows, int64_t D) {
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  for (int64_t row = blockIdx.x * static_cast<int64_t>(blockDim.x / 32) + threadIdx.x / 32; row < rows;
       row += warps) {
    float acc = 0.0f;
    for (int64_t i = threadIdx.x % 32; i < D; i += 32) acc += to_float(a[row * D + i]) * to_float(b[row * D + i]);
    acc = warp_sum(acc);
    if (threadIdx.x % 32 == 0) Di[row] = acc;
  }
}

}  // namespace

void attention_softmax(DType dtype, void* P, float* lse, const float* S, int64_t rows, int64_t T, int64_t Tk,
                       Documents docs) {
  if (rows == 0) return;
  dispatch_float(dtype, "attention", [&](auto tag) {
    using E = decltype(tag);
    softmax_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream()>>>(static_cast<E*>(P), lse, S, T, Tk, docs);
    HT_CUDA_CHECK_LAUNCH();
  });
}

void attention_probs(DType dtype, void* P, const float* S, const float* lse, const float* dP, const float* Di,
                     int64_t rows, int64_t T, int64_t Tk, Documents docs) {
  if (rows == 0) return;
  dispatch_float(dtype, "attention_backward", [&](auto tag) {
    using E = decltype(tag);
    probs_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream()>>>(static_cast<E*>(P), S, lse, dP, Di, T, Tk,
                                                                              docs);
    HT_CUDA_CHECK_LAUNCH();
  });
}

void attention_row_dot(DType dtype, float* Di, const void* dout, const void* out, int64_t rows, int64_t D) {
  if (rows == 0) return;
  dispatch_float(dtype, "attention_backward", [&](auto tag) {
    using E = decltype(tag);
    row_dot_kernel<<<grid_for(rows * 32), kThreads, 0, stream()>>>(Di, static_cast<const E*>(dout),
                                                                  static_cast<const E*>(out), rows, D);
    HT_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace hetu::ops::cuda
