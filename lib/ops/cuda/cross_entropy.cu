// CUDA cross-entropy over V classes, forward and fused backward (cpu/cross_entropy.cpp):
//   loss = Σ_n [t_n != ignore] (log S_n - (x[n, t_n] - m_n)), m_n = max, S_n = Σ exp(x - m_n)
//   dlogits[n, v] = scale · (exp(x[n, v] - m_n) / S_n - [v == t_n])
// Shapes: logits, dlogits (N, V); targets (N). Launch: one 512-thread block per row (online
// max and sum in one read, f32); per-row losses (f32) are summed by reduce.cu's sum_rows in a
// fixed order, so the loss is deterministic. Targets are checked by a separate kernel first.
#include "lib/ops/cuda/common.cuh"
#include "lib/ops/cuda/cross_entropy.h"
#include "lib/ops/cuda/reduce.h"

namespace hetu::ops::cuda {
namespace {

constexpr int kRowThreads = 512;

template <typename I>
__global__ void check_targets_kernel(unsigned long long* counters, const I* targets, int64_t N, int64_t V,
                                     int64_t ignore) {
  for (int64_t n = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; n < N;
       n += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = static_cast<int64_t>(targets[n]);
    if (t == ignore) continue;
    if (t < 0 || t >= V) atomicMin(&counters[1], static_cast<unsigned long long>(n));
    else atomicAdd(&counters[0], 1ull);
  }
}

template <typename T, typename I>
__global__ void ce_forward_kernel(float* row_loss, const T* logits, const I* targets, int64_t V, int64_t ignore) {
  __shared__ float shared[64];
  const int64_t n = blockIdx.x;
  const int64_t t = static_cast<int64_t>(targets[n]);
  if (t == ignore) {
    if (threadIdx.x == 0) row_loss[n] = 0.0f;
    return;
  }
  const T* x = logits + n * V;
  MaxSum ms{-INFINITY, 0.0f};
  for (int64_t v = threadIdx.x; v < V; v += blockDim.x) ms = add_element(ms, to_float(x[v]));
  ms = block_max_sum(ms, shared);
  if (threadIdx.x == 0) row_loss[n] = logf(ms.s) - (to_float(x[t]) - ms.m);
}

template <typename T, typename I>
__global__ void ce_backward_kernel(T* dlogits, const T* logits, const I* targets, int64_t V, int64_t ignore,
                                   float scale) {
  __shared__ float shared[64];
  const int64_t n = blockIdx.x;
  const int64_t t = static_cast<int64_t>(targets[n]);
  T* d = dlogits + n * V;
  if (t == ignore) {
    for (int64_t v = threadIdx.x; v < V; v += blockDim.x) d[v] = from_float<T>(0.0f);
    return;
  }
  const T* x = logits + n * V;
  MaxSum ms{-INFINITY, 0.0f};
  for (int64_t v = threadIdx.x; v < V; v += blockDim.x) ms = add_element(ms, to_float(x[v]));
  ms = block_max_sum(ms, shared);
  const float factor = scale / ms.s;
  for (int64_t v = threadIdx.x; v < V; v += blockDim.x) {
    const float p = expf(to_float(x[v]) - ms.m) * factor;
    d[v] = from_float<T>(v == t ? p - scale : p);
  }
}

}  // namespace

int64_t check_targets(DType index_dtype, const void* targets, int64_t N, int64_t V, int64_t ignore_index,
                      int64_t* bad_row, int64_t* bad_value) {
  *bad_row = -1;
  if (N == 0) return 0;
  int64_t count = 0;
  dispatch_index(index_dtype, "cross_entropy", [&](auto tag) {
    using I = decltype(tag);
    Workspace counters(2 * sizeof(unsigned long long));
    const unsigned long long init[2] = {0ull, static_cast<unsigned long long>(N)};
    HT_CUDA_CHECK(cudaMemcpyAsync(counters.as<void>(), init, sizeof(init), cudaMemcpyHostToDevice, stream()));
    check_targets_kernel<<<grid_for(N), kThreads, 0, stream()>>>(counters.as<unsigned long long>(),
                                                               static_cast<const I*>(targets), N, V, ignore_index);
    HT_CUDA_CHECK_LAUNCH();
    unsigned long long host[2] = {0, 0};
    HT_CUDA_CHECK(cudaMemcpyAsync(host, counters.as<void>(), sizeof(host), cudaMemcpyDeviceToHost, stream()));
    HT_CUDA_CHECK(cudaStreamSynchronize(stream()));
    count = static_cast<int64_t>(host[0]);
    if (host[1] < static_cast<unsigned long long>(N)) {
      *bad_row = static_cast<int64_t>(host[1]);
      I value{};
      HT_CUDA_CHECK(cudaMemcpy(&value, static_cast<const I*>(targets) + *bad_row, sizeof(I), cudaMemcpyDeviceToHost));
      *bad_value = static_cast<int64_t>(value);
    }
  });
  return count;
}

void cross_entropy_forward(DType dtype, DType index_dtype, float* loss, const void* logits, const void* targets,
                           int64_t N, int64_t V, int64_t ignore_index) {
  if (N == 0) {
    HT_CUDA_CHECK(cudaMemsetAsync(loss, 0, sizeof(float), stream()));
    return;
  }
  Workspace row_loss(static_cast<size_t>(N) * sizeof(float));
  dispatch_float(dtype, "cross_entropy", [&](auto vtag) {
    using T = decltype(vtag);
    dispatch_index(index_dtype, "cross_entropy", [&](auto itag) {
      using I = decltype(itag);
      ce_forward_kernel<<<static_cast<unsigned>(N), kRowThreads, 0, stream()>>>(
          row_loss.as<float>(), static_cast<const T*>(logits), static_cast<const I*>(targets), V, ignore_index);
      HT_CUDA_CHECK_LAUNCH();
    });
  });
  sum_rows(DType::f32, loss, row_loss.as<float>(), 1, N, 1.0f);
}

void cross_entropy_backward(DType dtype, DType index_dtype, void* dlogits, const void* logits, const void* targets,
                            int64_t N, int64_t V, int64_t ignore_index, float scale) {
  if (N == 0) return;
  dispatch_float(dtype, "cross_entropy_backward", [&](auto vtag) {
    using T = decltype(vtag);
    dispatch_index(index_dtype, "cross_entropy_backward", [&](auto itag) {
      using I = decltype(itag);
      ce_backward_kernel<<<static_cast<unsigned>(N), kRowThreads, 0, stream()>>>(
          static_cast<T*>(dlogits), static_cast<const T*>(logits), static_cast<const I*>(targets), V, ignore_index,
          scale);
      HT_CUDA_CHECK_LAUNCH();
    });
  });
}

}  // namespace hetu::ops::cuda
