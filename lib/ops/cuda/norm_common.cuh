// Column sums shared by the layer_norm and rms_norm backwards: dweight (and dbias) sum a
// per-element term over all N rows. Deterministic, no atomics: grid (ceil(C/32), S) of
// 32×8 threads; block (cx, s) sums rows s·8+ty, s·8+ty+8S, ... of 32 columns, reduces its 8
// row-threads in shared memory into partial[s][c]; a second kernel adds the S partials of
// each column in order.
#pragma once

#include "lib/ops/cuda/common.cuh"

namespace hetu::ops::cuda {

constexpr int kColThreadsX = 32, kColThreadsY = 8;

inline int64_t column_splits(int64_t N) {
  const int64_t s = (N + 255) / 256;
  return s < 1 ? 1 : s > 128 ? 128 : s;
}

// Term(n, c) -> float2 (two sums at once: .x -> partial_x, .y -> partial_y).
template <typename Term>
__global__ void column_partials_kernel(float* partial_x, float* partial_y, int64_t N, int64_t C, Term term) {
  __shared__ float sx[kColThreadsY][kColThreadsX + 1], sy[kColThreadsY][kColThreadsX + 1];
  const int64_t c = blockIdx.x * static_cast<int64_t>(kColThreadsX) + threadIdx.x;
  float ax = 0.0f, ay = 0.0f;
  if (c < C) {
    for (int64_t n = blockIdx.y * static_cast<int64_t>(kColThreadsY) + threadIdx.y; n < N;
         n += static_cast<int64_t>(gridDim.y) * kColThreadsY) {
      const float2 t = term(n, c);
      ax += t.x;
      ay += t.y;
    }
  }
  sx[threadIdx.y][threadIdx.x] = ax;
  sy[threadIdx.y][threadIdx.x] = ay;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    for (int r = 1; r < kColThreadsY; ++r) ax += sx[r][threadIdx.x], ay += sy[r][threadIdx.x];
    partial_x[blockIdx.y * C + c] = ax;
    partial_y[blockIdx.y * C + c] = ay;
  }
}

// out_x[c] = Σ_s partial_x[s][c] (out_y likewise, when not null).
template <typename T>
__global__ void column_finish_kernel(T* out_x, T* out_y, const float* partial_x, const float* partial_y, int64_t S,
                                     int64_t C) {
  for (int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; c < C;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float ax = 0.0f, ay = 0.0f;
    for (int64_t s = 0; s < S; ++s) ax += partial_x[s * C + c], ay += partial_y[s * C + c];
    out_x[c] = from_float<T>(ax);
    if (out_y != nullptr) out_y[c] = from_float<T>(ay);
  }
}

template <typename T, typename Term> void column_sums(T* out_x, T* out_y, int64_t N, int64_t C, Term term) {
  const int64_t S = column_splits(N);
  Workspace partial(static_cast<size_t>(2 * S * C) * sizeof(float));
  float* px = partial.as<float>();
  float* py = px + S * C;
  const dim3 grid(static_cast<unsigned>((C + kColThreadsX - 1) / kColThreadsX), static_cast<unsigned>(S));
  column_partials_kernel<<<grid, dim3(kColThreadsX, kColThreadsY), 0, stream()>>>(px, py, N, C, term);
  HT_CUDA_CHECK_LAUNCH();
  column_finish_kernel<<<grid_for(C), kThreads, 0, stream()>>>(out_x, out_y, px, py, S, C);
  HT_CUDA_CHECK_LAUNCH();
}

}  // namespace hetu::ops::cuda
