// CUDA row reductions over x (outer, inner), contiguous, f32 accumulation, deterministic.
// Every launch sized by grid_for (at most 65536 blocks) loops grid-stride over its rows.
// sum_rows launch: inner < 1024: one warp per row (256 threads = 8 rows per block);
//   otherwise grid (outer, splits) of 256 threads, each block summing one 1/splits slice of a
//   row into a partial (splits > 1 only when rows are few and long), then one thread per row
//   adds its partials in order.
// max_rows launch: one 256-thread block per row; (value, index) pairs reduce so that NaN wins,
//   then the larger value, then the smaller index (the CPU kernel's first maximum).
#include <algorithm>

#include "lib/ops/cuda/common.cuh"
#include "lib/ops/cuda/reduce.h"

namespace hetu::ops::cuda {
namespace {

template <typename T>
__global__ void sum_rows_warp_kernel(T* out, const T* x, int64_t outer, int64_t inner, float scale) {
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  for (int64_t row = blockIdx.x * static_cast<int64_t>(blockDim.x / 32) + threadIdx.x / 32; row < outer;
       row += warps) {
    const T* r = x + row * inner;
    float acc = 0.0f;
    for (int64_t i = threadIdx.x % 32; i < inner; i += 32) acc += to_float(r[i]);
    acc = warp_sum(acc);
    if (threadIdx.x % 32 == 0) out[row] = from_float<T>(acc * scale);
  }
}

template <typename T>
__global__ void sum_rows_block_kernel(float* partial, const T* x, int64_t inner, int64_t chunk) {
  __shared__ float shared[32];
  const int64_t row = blockIdx.x, split = blockIdx.y;
  const T* r = x + row * inner;
  const int64_t begin = split * chunk;
  const int64_t end = begin + chunk < inner ? begin + chunk : inner;
  float acc = 0.0f;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) acc += to_float(r[i]);
  acc = block_sum(acc, shared);
  if (threadIdx.x == 0) partial[row * gridDim.y + split] = acc;
}

template <typename T>
__global__ void sum_partials_kernel(T* out, const float* partial, int64_t outer, int64_t splits, float scale) {
  for (int64_t row = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; row < outer;
       row += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float acc = 0.0f;
    for (int64_t s = 0; s < splits; ++s) acc += partial[row * splits + s];
    out[row] = from_float<T>(acc * scale);
  }
}

// a beats b: NaN first, then larger, then smaller index.
__device__ __forceinline__ bool better(float va, int64_t ia, float vb, int64_t ib) {
  const bool na = isnan(va), nb = isnan(vb);
  if (na != nb) return na;
  if (!na && va != vb) return va > vb;
  return ia < ib;
}

template <typename T> __global__ void max_rows_kernel(T* out, int64_t* argmax, const T* x, int64_t inner) {
  __shared__ float sv[32];
  __shared__ int64_t si[32];
  const T* r = x + blockIdx.x * inner;
  float v = -INFINITY;
  int64_t idx = inner;  // "none yet": loses every comparison against a real element
  for (int64_t i = threadIdx.x; i < inner; i += blockDim.x) {
    const float xi = to_float(r[i]);
    if (idx == inner || better(xi, i, v, idx)) v = xi, idx = i;
  }
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, o);
    const int64_t oi = __shfl_xor_sync(0xffffffffu, idx, o);
    if (oi != inner && (idx == inner || better(ov, oi, v, idx))) v = ov, idx = oi;
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) sv[warp] = v, si[warp] = idx;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w) {
      if (si[w] != inner && (idx == inner || better(sv[w], si[w], v, idx))) v = sv[w], idx = si[w];
    }
    out[blockIdx.x] = r[idx];
    if (argmax != nullptr) argmax[blockIdx.x] = idx;
  }
}

template <typename T>
__global__ void max_backward_kernel(T* out, const T* grad, const int64_t* argmax, int64_t count, int64_t n,
                                    int64_t inner) {
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; r < count;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t o = r / inner, i = r % inner;
    out[(o * n + argmax[r]) * inner + i] = grad[r];
  }
}

}  // namespace

void sum_rows(DType dtype, void* out, const void* x, int64_t outer, int64_t inner, float scale) {
  if (outer == 0) return;
  dispatch_float(dtype, "sum", [&](auto tag) {
    using T = decltype(tag);
    T* po = static_cast<T*>(out);
    const T* px = static_cast<const T*>(x);
    if (inner < 1024) {
      sum_rows_warp_kernel<<<grid_for(outer * 32), kThreads, 0, stream()>>>(po, px, outer, inner, scale);
      HT_CUDA_CHECK_LAUNCH();
      return;
    }
    // Aim for at least ~1024 blocks in all; each split covers at least 4096 elements.
    int64_t splits = outer >= 1024 ? 1 : (1024 + outer - 1) / outer;
    splits = std::min<int64_t>(splits, (inner + 4095) / 4096);
    const int64_t chunk = (inner + splits - 1) / splits;
    Workspace partial(static_cast<size_t>(outer * splits) * sizeof(float));
    sum_rows_block_kernel<<<dim3(static_cast<unsigned>(outer), static_cast<unsigned>(splits)), kThreads, 0,
                            stream()>>>(partial.as<float>(), px, inner, chunk);
    HT_CUDA_CHECK_LAUNCH();
    sum_partials_kernel<<<grid_for(outer), kThreads, 0, stream()>>>(po, partial.as<float>(), outer, splits, scale);
    HT_CUDA_CHECK_LAUNCH();
  });
}

void max_rows(DType dtype, void* out, int64_t* argmax, const void* x, int64_t outer, int64_t inner) {
  if (outer == 0) return;
  dispatch_float(dtype, "max", [&](auto tag) {
    using T = decltype(tag);
    max_rows_kernel<<<static_cast<unsigned>(outer), kThreads, 0, stream()>>>(static_cast<T*>(out), argmax,
                                                                            static_cast<const T*>(x), inner);
    HT_CUDA_CHECK_LAUNCH();
  });
}

void max_backward(DType dtype, void* out, const void* grad, const int64_t* argmax, int64_t outer, int64_t n,
                  int64_t inner) {
  const int64_t count = outer * inner;
  if (count == 0) return;
  dispatch_float(dtype, "max_backward", [&](auto tag) {
    using T = decltype(tag);
    max_backward_kernel<<<grid_for(count), kThreads, 0, stream()>>>(static_cast<T*>(out), static_cast<const T*>(grad),
                                                                   argmax, count, n, inner);
    HT_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace hetu::ops::cuda
