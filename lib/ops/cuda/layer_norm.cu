// CUDA layer_norm over the last dim, forward and backward (formulas as cpu/layer_norm.cpp):
//   mean, rstd = 1/sqrt(var + eps) (biased variance, two passes), out = (x - mean)·rstd·w + b
//   dx = rstd·(dnorm - mean(dnorm) - xhat·mean(dnorm·xhat)), dnorm = g·w, xhat = (x - mean)·rstd
//   dweight = Σ_rows g·xhat, dbias = Σ_rows g   (norm_common.cuh, deterministic)
// Shapes: x, out, grad, dx (N, C); weight, bias (C); mean, rstd (N) f32.
// Launch: forward and dx: one block per row, 128 threads (C <= 1024) else 256, f32 sums.
#include "lib/ops/cuda/layer_norm.h"
#include "lib/ops/cuda/norm_common.cuh"

namespace hetu::ops::cuda {
namespace {

int threads_for(int64_t C) { return C <= 1024 ? 128 : 256; }

template <typename T>
__global__ void layer_norm_forward_kernel(T* out, float* mean, float* rstd, const T* x, const T* w, const T* b,
                                          int64_t C, float eps) {
  __shared__ float shared[32];
  const T* xr = x + blockIdx.x * C;
  T* orow = out + blockIdx.x * C;
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < C; i += blockDim.x) s += to_float(xr[i]);
  const float m = block_sum(s, shared) / static_cast<float>(C);
  float v = 0.0f;
  for (int64_t i = threadIdx.x; i < C; i += blockDim.x) {
    const float d = to_float(xr[i]) - m;
    v += d * d;
  }
  const float r = rsqrtf(block_sum(v, shared) / static_cast<float>(C) + eps);
  for (int64_t i = threadIdx.x; i < C; i += blockDim.x) {
    orow[i] = from_float<T>((to_float(xr[i]) - m) * r * to_float(w[i]) + to_float(b[i]));
  }
  if (threadIdx.x == 0) mean[blockIdx.x] = m, rstd[blockIdx.x] = r;
}

template <typename T>
__global__ void layer_norm_dx_kernel(T* dx, const T* grad, const T* x, const T* w, const float* mean,
                                     const float* rstd, int64_t C) {
  __shared__ float shared[32];
  const int64_t base = blockIdx.x * C;
  const float m = mean[blockIdx.x], r = rstd[blockIdx.x];
  float a = 0.0f, bsum = 0.0f;
  for (int64_t i = threadIdx.x; i < C; i += blockDim.x) {
    const float dnorm = to_float(grad[base + i]) * to_float(w[i]);
    a += dnorm;
    bsum += dnorm * (to_float(x[base + i]) - m) * r;
  }
  const float dnorm_mean = block_sum(a, shared) / static_cast<float>(C);
  const float dnorm_xhat_mean = block_sum(bsum, shared) / static_cast<float>(C);
  for (int64_t i = threadIdx.x; i < C; i += blockDim.x) {
    const float dnorm = to_float(grad[base + i]) * to_float(w[i]);
    const float xhat = (to_float(x[base + i]) - m) * r;
    dx[base + i] = from_float<T>((dnorm - dnorm_mean - xhat * dnorm_xhat_mean) * r);
  }
}

template <typename T> struct LayerNormParamTerm {
  const T* grad;
  const T* x;
  const float* mean;
  const float* rstd;
  int64_t C;
  __device__ float2 operator()(int64_t n, int64_t c) const {
    const float g = to_float(grad[n * C + c]);
    return make_float2(g * (to_float(x[n * C + c]) - mean[n]) * rstd[n], g);
  }
};

}  // namespace

void layer_norm_forward(DType dtype, void* out, float* mean, float* rstd, const void* x, const void* weight,
                        const void* bias, int64_t N, int64_t C, float eps) {
  if (N == 0) return;
  dispatch_float(dtype, "layer_norm", [&](auto tag) {
    using T = decltype(tag);
    layer_norm_forward_kernel<<<static_cast<unsigned>(N), threads_for(C), 0, stream()>>>(
        static_cast<T*>(out), mean, rstd, static_cast<const T*>(x), static_cast<const T*>(weight),
        static_cast<const T*>(bias), C, eps);
    HT_CUDA_CHECK_LAUNCH();
  });
}

void layer_norm_backward(DType dtype, void* dx, void* dweight, void* dbias, const void* grad, const void* x,
                         const void* weight, const float* mean, const float* rstd, int64_t N, int64_t C) {
  dispatch_float(dtype, "layer_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* g = static_cast<const T*>(grad);
    const T* px = static_cast<const T*>(x);
    if (N > 0) {
      layer_norm_dx_kernel<<<static_cast<unsigned>(N), threads_for(C), 0, stream()>>>(
          static_cast<T*>(dx), g, px, static_cast<const T*>(weight), mean, rstd, C);
      HT_CUDA_CHECK_LAUNCH();
    }
    column_sums(static_cast<T*>(dweight), static_cast<T*>(dbias), N, C, LayerNormParamTerm<T>{g, px, mean, rstd, C});
  });
}

}  // namespace hetu::ops::cuda
