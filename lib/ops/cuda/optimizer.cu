// CUDA AdamW (decoupled weight decay, as cpu/optimizer.cpp) and the sum of squares for
// global_norm.
//   g = grad_scale · grad;  m = β1 m + (1-β1) g;  v = β2 v + (1-β2) g²;  p -= lr ((m/bc1) / (√(v/bc2) + eps) + wd p)
// Launch: AdamW one thread per element, 256 threads, grid-stride. Sum of squares: at most
// 1024 blocks of 256 threads, each summing a fixed grid-stride share in f32 into a partial;
// one block then adds the partials in f64 in a fixed tree and adds them to the accumulator.
#include "lib/ops/cuda/common.cuh"
#include "lib/ops/cuda/optimizer.h"

namespace hetu::ops::cuda {
namespace {

struct AdamWF {
  float lr, beta1, beta2, one_minus_beta1, one_minus_beta2, inv_bc1, inv_bc2, eps, wd, grad_scale;
};

template <typename T> __global__ void adamw_kernel(T* param, const T* grad, T* m, T* v, int64_t n, AdamWF s) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float g = to_float(grad[i]) * s.grad_scale;
    const float mi = s.beta1 * to_float(m[i]) + s.one_minus_beta1 * g;
    const float vi = s.beta2 * to_float(v[i]) + s.one_minus_beta2 * g * g;
    m[i] = from_float<T>(mi);
    v[i] = from_float<T>(vi);
    const float p = to_float(param[i]);
    param[i] = from_float<T>(p - s.lr * ((mi * s.inv_bc1) / (sqrtf(vi * s.inv_bc2) + s.eps) + s.wd * p));
  }
}

constexpr int kMaxBlocks = 1024;

template <typename T> __global__ void square_partials_kernel(float* partial, const T* x, int64_t n) {
  __shared__ float shared[32];
  float acc = 0.0f;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v = to_float(x[i]);
    acc += v * v;
  }
  acc = block_sum(acc, shared);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

__global__ void add_partials_kernel(double* acc, const float* partial, int blocks) {
  __shared__ double shared[kMaxBlocks];
  for (int i = threadIdx.x; i < kMaxBlocks; i += blockDim.x) shared[i] = i < blocks ? partial[i] : 0.0;
  __syncthreads();
  for (int width = kMaxBlocks / 2; width > 0; width /= 2) {
    for (int i = threadIdx.x; i < width; i += blockDim.x) shared[i] += shared[i + width];
    __syncthreads();
  }
  if (threadIdx.x == 0) *acc += shared[0];
}

template <typename T> __global__ void unscale_kernel(T* x, int64_t n, float inv_scale, int32_t* found) {
  bool bad = false;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v = to_float(x[i]) * inv_scale;
    x[i] = from_float<T>(v);
    bad |= !isfinite(v);
  }
  if (bad) atomicOr(found, 1);
}

}  // namespace

void unscale_and_check(DType dtype, void* x, int64_t n, float inv_scale, int32_t* found) {
  if (n == 0) return;
  dispatch_float(dtype, "unscale_and_check_", [&](auto tag) {
    using T = decltype(tag);
    unscale_kernel<<<grid_for(n), kThreads, 0, stream()>>>(static_cast<T*>(x), n, inv_scale, found);
    HT_CUDA_CHECK_LAUNCH();
  });
}

void adamw_update(DType dtype, void* param, const void* grad, void* m, void* v, int64_t n,
                  const cpu::AdamWScalars& s) {
  if (n == 0) return;
  const AdamWF f{static_cast<float>(s.lr),          static_cast<float>(s.beta1),       static_cast<float>(s.beta2),
                 static_cast<float>(1 - s.beta1),   static_cast<float>(1 - s.beta2),   static_cast<float>(1 / s.bc1),
                 static_cast<float>(1 / s.bc2),     static_cast<float>(s.eps),         static_cast<float>(s.weight_decay),
                 static_cast<float>(s.grad_scale)};
  dispatch_float(dtype, "adamw_update", [&](auto tag) {
    using T = decltype(tag);
    adamw_kernel<<<grid_for(n), kThreads, 0, stream()>>>(static_cast<T*>(param), static_cast<const T*>(grad),
                                                        static_cast<T*>(m), static_cast<T*>(v), n, f);
    HT_CUDA_CHECK_LAUNCH();
  });
}

void sum_squares_accumulate(DType dtype, const void* x, int64_t n, double* acc) {
  if (n == 0) return;
  const int64_t wanted = (n + kThreads * 8 - 1) / (kThreads * 8);
  const int blocks = static_cast<int>(wanted < kMaxBlocks ? wanted : kMaxBlocks);
  Workspace partial(static_cast<size_t>(blocks) * sizeof(float));
  dispatch_float(dtype, "global_norm", [&](auto tag) {
    using T = decltype(tag);
    square_partials_kernel<<<blocks, kThreads, 0, stream()>>>(partial.as<float>(), static_cast<const T*>(x), n);
    HT_CUDA_CHECK_LAUNCH();
  });
  add_partials_kernel<<<1, kThreads, 0, stream()>>>(acc, partial.as<float>(), blocks);
  HT_CUDA_CHECK_LAUNCH();
}

}  // namespace hetu::ops::cuda
