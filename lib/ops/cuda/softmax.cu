// CUDA softmax / log_softmax over rows of C, forward and backward. x, out, grad, y, dx are
// (N, C) contiguous, f32 or bf16; all arithmetic in f32.
// Launch: one block per row, 128 threads for C <= 1024 else 512; the forward reads the row
// twice (online max + sum of exps, then the write), the backward twice (dot, then the write).
//   softmax:     out = exp(x - m) / S            dx = y (g - Σ g·y)
//   log_softmax: out = (x - m) - log S           dx = g - exp(y) Σ g
#include "lib/ops/cuda/common.cuh"
#include "lib/ops/cuda/softmax.h"

namespace hetu::ops::cuda {
namespace {

template <typename T, bool kLog> __global__ void softmax_forward_kernel(T* out, const T* x, int64_t C) {
  __shared__ float shared[64];
  const T* xr = x + blockIdx.x * C;
  T* orow = out + blockIdx.x * C;
  MaxSum ms{-INFINITY, 0.0f};
  for (int64_t i = threadIdx.x; i < C; i += blockDim.x) ms = add_element(ms, to_float(xr[i]));
  ms = block_max_sum(ms, shared);
  const float log_s = logf(ms.s), inv_s = 1.0f / ms.s;
  for (int64_t i = threadIdx.x; i < C; i += blockDim.x) {
    const float d = to_float(xr[i]) - ms.m;
    orow[i] = from_float<T>(kLog ? d - log_s : expf(d) * inv_s);
  }
}

template <typename T, bool kLog>
__global__ void softmax_backward_kernel(T* dx, const T* grad, const T* y, int64_t C) {
  __shared__ float shared[32];
  const int64_t base = blockIdx.x * C;
  float acc = 0.0f;
  for (int64_t i = threadIdx.x; i < C; i += blockDim.x) {
    const float g = to_float(grad[base + i]);
    acc += kLog ? g : g * to_float(y[base + i]);
  }
  acc = block_sum(acc, shared);
  for (int64_t i = threadIdx.x; i < C; i += blockDim.x) {
    const float g = to_float(grad[base + i]), yi = to_float(y[base + i]);
    dx[base + i] = from_float<T>(kLog ? g - expf(yi) * acc : yi * (g - acc));
  }
}

int threads_for(int64_t C) { return C <= 1024 ? 128 : 512; }

}  // namespace

void softmax_forward(DType dtype, void* out, const void* x, int64_t N, int64_t C, bool log) {
  if (N == 0 || C == 0) return;
  dispatch_float(dtype, "softmax", [&](auto tag) {
    using T = decltype(tag);
    auto kernel = log ? softmax_forward_kernel<T, true> : softmax_forward_kernel<T, false>;
    kernel<<<static_cast<unsigned>(N), threads_for(C), 0, stream()>>>(static_cast<T*>(out), static_cast<const T*>(x),
                                                                      C);
    HT_CUDA_CHECK_LAUNCH();
  });
}

void softmax_backward(DType dtype, void* dx, const void* grad, const void* y, int64_t N, int64_t C, bool log) {
  if (N == 0 || C == 0) return;
  dispatch_float(dtype, "softmax_backward", [&](auto tag) {
    using T = decltype(tag);
    auto kernel = log ? softmax_backward_kernel<T, true> : softmax_backward_kernel<T, false>;
    kernel<<<static_cast<unsigned>(N), threads_for(C), 0, stream()>>>(
        static_cast<T*>(dx), static_cast<const T*>(grad), static_cast<const T*>(y), C);
    HT_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace hetu::ops::cuda
