// CUDA rms_norm over the last dim, forward and backward (formulas as cpu/rms_norm.cpp):
//   rstd = 1/sqrt(mean(x²) + eps), out = x·rstd·w
//   dx = rstd·(g·w - xhat·mean(g·w·xhat)), xhat = x·rstd;  dweight = Σ_rows g·xhat
// Shapes: x, out, grad, dx (N, C); weight (C); rstd (N) f32.
// Launch: forward and dx: one block per row, 128 threads (C <= 1024) else 256; dweight by
// the column sums of norm_common.cuh.
#include "lib/ops/cuda/norm_common.cuh"
#include "lib/ops/cuda/rms_norm.h"

namespace hetu::ops::cuda {
namespace {

int threads_for(int64_t C) { return C <= 1024 ? 128 : 256; }

template <typename T>
__global__ void rms_norm_forward_kernel(T* out, float* rstd, const T* x, const T* w, int64_t C, float eps) {
  __shared__ float shared[32];
  const T* xr = x + blockIdx.x * C;
  T* orow = out + blockIdx.x * C;
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < C; i += blockDim.x) {
    const float v = to_float(xr[i]);
    s += v * v;
  }
  const float r = rsqrtf(block_sum(s, shared) / static_cast<float>(C) + eps);
  for (int64_t i = threadIdx.x; i < C; i += blockDim.x) orow[i] = from_float<T>(to_float(xr[i]) * r * to_float(w[i]));
  if (threadIdx.x == 0) rstd[blockIdx.x] = r;
}

template <typename T>
__global__ void rms_norm_dx_kernel(T* dx, const T* grad, const T* x, const T* w, const float* rstd, int64_t C) {
  __shared__ float shared[32];
  const int64_t base = blockIdx.x * C;
  const float r = rstd[blockIdx.x];
  float a = 0.0f;
  for (int64_t i = threadIdx.x; i < C; i += blockDim.x) {
    a += to_float(grad[base + i]) * to_float(w[i]) * to_float(x[base + i]) * r;
  }
  const float dot_mean = block_sum(a, shared) / static_cast<float>(C);
  for (int64_t i = threadIdx.x; i < C; i += blockDim.x) {
    const float xhat = to_float(x[base + i]) * r;
    dx[base + i] = from_float<T>((to_float(grad[base + i]) * to_float(w[i]) - xhat * dot_mean) * r);
  }
}

template <typename T> struct RmsNormParamTerm {
  const T* grad;
  const T* x;
  const float* rstd;
  int64_t C;
  __device__ float2 operator()(int64_t n, int64_t c) const {
    return make_float2(to_float(grad[n * C + c]) * to_float(x[n * C + c]) * rstd[n], 0.0f);
  }
};

}  // namespace

void rms_norm_forward(DType dtype, void* out, float* rstd, const void* x, const void* weight, int64_t N, int64_t C,
                      float eps) {
  if (N == 0) return;
  dispatch_float(dtype, "rms_norm", [&](auto tag) {
    using T = decltype(tag);
    rms_norm_forward_kernel<<<static_cast<unsigned>(N), threads_for(C), 0, stream()>>>(
        static_cast<T*>(out), rstd, static_cast<const T*>(x), static_cast<const T*>(weight), C, eps);
    HT_CUDA_CHECK_LAUNCH();
  });
}

void rms_norm_backward(DType dtype, void* dx, void* dweight, const void* grad, const void* x, const void* weight,
                       const float* rstd, int64_t N, int64_t C) {
  dispatch_float(dtype, "rms_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* g = static_cast<const T*>(grad);
    const T* px = static_cast<const T*>(x);
    if (N > 0) {
      rms_norm_dx_kernel<<<static_cast<unsigned>(N), threads_for(C), 0, stream()>>>(
          static_cast<T*>(dx), g, px, static_cast<const T*>(weight), rstd, C);
      HT_CUDA_CHECK_LAUNCH();
    }
    column_sums(static_cast<T*>(dweight), static_cast<T*>(nullptr), N, C, RmsNormParamTerm<T>{g, px, rstd, C});
  });
}

}  // namespace hetu::ops::cuda
