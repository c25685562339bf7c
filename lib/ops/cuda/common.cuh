// Shared device helpers of the CUDA kernels (lib/ops/cuda/*.cu): bf16/f16 <-> f32 conversion,
// warp and block reductions, vectorised elementwise maps, dtype dispatch, launch sizing and
// scratch memory from the caching allocator. Every kernel computes in f32 whatever the
// storage dtype (f32, bf16 or f16). No fmt/spdlog here (nvcc limits, docs/TOOLCHAIN.md).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "lib/core/cuda/cuda_check.h"
#include "lib/core/dtype.h"
#include "lib/ops/cuda/workspace.h"

namespace hetu::ops::cuda {

using bf16 = __nv_bfloat16;
using f16 = __half;
using hetu::cuda::stream;
using hetu::cuda::throw_cuda_error;

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(bf16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_float(f16 x) { return __half2float(x); }
template <typename T> __device__ __forceinline__ T from_float(float x) {
  if constexpr (std::is_same_v<T, bf16>) return __float2bfloat16_rn(x);
  else if constexpr (std::is_same_v<T, f16>) return __float2half_rn(x);
  else return x;
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum (or max) over the block; every thread gets the result. blockDim.x a multiple of 32,
// at most 1024. `shared` holds 32 floats; the call ends with a barrier so it may be reused.
template <bool kMax> __device__ __forceinline__ float block_reduce(float v, float* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = kMax ? warp_max(v) : warp_sum(v);
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float r = lane < warps ? shared[lane] : (kMax ? -INFINITY : 0.0f);
  r = kMax ? warp_max(r) : warp_sum(r);
  __syncthreads();
  return r;
}
__device__ __forceinline__ float block_sum(float v, float* shared) { return block_reduce<false>(v, shared); }
__device__ __forceinline__ float block_max(float v, float* shared) { return block_reduce<true>(v, shared); }

// Online softmax statistics: (m, s) stands for Σ exp(x - m) over some elements; merging two
// rescales to the larger max. An empty set is (-inf, 0).
struct MaxSum {
  float m, s;
};
__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
  const float m = fmaxf(a.m, b.m);
  if (m == -INFINITY) return {m, 0.0f};
  return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}
__device__ __forceinline__ MaxSum add_element(MaxSum a, float x) { return merge(a, MaxSum{x, 1.0f}); }
// Merged over the block; every thread gets the result. `shared` holds 64 floats.
__device__ __forceinline__ MaxSum block_max_sum(MaxSum v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) {
    v = merge(v, MaxSum{__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)});
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  if (lane == 0) shared[warp] = v.m, shared[32 + warp] = v.s;
  __syncthreads();
  MaxSum r = lane < warps ? MaxSum{shared[lane], shared[32 + lane]} : MaxSum{-INFINITY, 0.0f};
  for (int o = 16; o > 0; o >>= 1) {
    r = merge(r, MaxSum{__shfl_xor_sync(0xffffffffu, r.m, o), __shfl_xor_sync(0xffffffffu, r.s, o)});
  }
  __syncthreads();
  return r;
}

// 16-byte packs for vectorised loads: 4 floats or 8 bf16/f16.
template <typename T> struct alignas(16) Pack {
  static constexpr int kN = 16 / sizeof(T);
  T v[kN];
};

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

constexpr int kThreads = 256;
inline unsigned grid_for(int64_t work, int threads = kThreads) {
  const int64_t blocks = (work + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks > 65536 ? 65536 : blocks);
}

// out[i] = f(x[i]) over n elements; f maps float -> float. vec: all pointers 16-byte aligned.
template <typename T, typename F> __global__ void map1_kernel(T* out, const T* x, int64_t n, F f, bool vec) {
  constexpr int kN = Pack<T>::kN;
  const int64_t tid = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t done = 0;
  if (vec) {
    const int64_t packs = n / kN;
    for (int64_t p = tid; p < packs; p += step) {
      const Pack<T> in = reinterpret_cast<const Pack<T>*>(x)[p];
      Pack<T> o;
#pragma unroll
      for (int j = 0; j < kN; ++j) o.v[j] = from_float<T>(f(to_float(in.v[j])));
      reinterpret_cast<Pack<T>*>(out)[p] = o;
    }
    done = packs * kN;
  }
  for (int64_t i = done + tid; i < n; i += step) out[i] = from_float<T>(f(to_float(x[i])));
}

// out[i] = f(a[i], b[i]).
template <typename T, typename F>
__global__ void map2_kernel(T* out, const T* a, const T* b, int64_t n, F f, bool vec) {
  constexpr int kN = Pack<T>::kN;
  const int64_t tid = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t done = 0;
  if (vec) {
    const int64_t packs = n / kN;
    for (int64_t p = tid; p < packs; p += step) {
      const Pack<T> pa = reinterpret_cast<const Pack<T>*>(a)[p];
      const Pack<T> pb = reinterpret_cast<const Pack<T>*>(b)[p];
      Pack<T> o;
#pragma unroll
      for (int j = 0; j < kN; ++j) o.v[j] = from_float<T>(f(to_float(pa.v[j]), to_float(pb.v[j])));
      reinterpret_cast<Pack<T>*>(out)[p] = o;
    }
    done = packs * kN;
  }
  for (int64_t i = done + tid; i < n; i += step) out[i] = from_float<T>(f(to_float(a[i]), to_float(b[i])));
}

template <typename T, typename F> void launch_map1(T* out, const T* x, int64_t n, F f) {
  if (n == 0) return;
  const bool vec = aligned16(out) && aligned16(x);
  map1_kernel<<<grid_for(vec ? (n + Pack<T>::kN - 1) / Pack<T>::kN : n), kThreads, 0, stream()>>>(out, x, n, f, vec);
  HT_CUDA_CHECK_LAUNCH();
}

template <typename T, typename F> void launch_map2(T* out, const T* a, const T* b, int64_t n, F f) {
  if (n == 0) return;
  const bool vec = aligned16(out) && aligned16(a) && aligned16(b);
  map2_kernel<<<grid_for(vec ? (n + Pack<T>::kN - 1) / Pack<T>::kN : n), kThreads, 0, stream()>>>(out, a, b, n, f,
                                                                                                   vec);
  HT_CUDA_CHECK_LAUNCH();
}

// Runs fn(T{}) with T = float for f32, bf16 for bf16 and f16 for f16; other dtypes are an error.
template <typename Fn> void dispatch_float(DType dtype, const char* op, Fn&& fn) {
  if (dtype == DType::f32) return fn(float{});
  if (dtype == DType::bf16) return fn(bf16{});
  if (dtype == DType::f16) return fn(f16{});
  throw_cuda_error(__FILE__, __LINE__, op, "dtype not supported by the CUDA kernel (f32, bf16, f16)");
}
template <typename Fn> void dispatch_index(DType dtype, const char* op, Fn&& fn) {
  if (dtype == DType::i32) return fn(int32_t{});
  if (dtype == DType::i64) return fn(int64_t{});
  throw_cuda_error(__FILE__, __LINE__, op, "index dtype must be i32 or i64");
}

}  // namespace hetu::ops::cuda
