// CUDA cross-entropy over V classes, forward and fused backward (cpu/cross_entropy.cpp):
//   loss = Σ_n [t_n != ignore] (log S_n - (x[n, t_n] - m_n)), m_n = max, S_n = Σ exp(x - m_n)
//   dlogits[n, v] = scale · (exp(x[n, v] - m_n) / S_n - [v == t_n])
// Shapes: logits, dlogits (N, V); targets (N). Launch: one 512-thread block per row (online
// max and sum in one read, f32); per-row losses (f32) are summed by reduce.cu's sum_rows in a
// fixed order, so the loss is deterministic. Targets are checked by a separate kernel first.
// The vocabulary-shard kernels (cross_entropy_shard_*, lib/nn/parallel_cross_entropy.cpp)
// read each logit once too: the stats kernel gives a row's (max, sum_exp, target logit), the
// backward writes each gradient from the global (max, sum_exp); 16-byte packs when rows align.
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

// Adds x to a running (m, s) of one thread: one exp per element. -inf adds nothing; NaN
// makes s NaN (as in the CPU kernel's sum).
__device__ __forceinline__ void online_add(float& m, float& s, float x) {
  if (x > m) {
    s = s * expf(m - x) + 1.0f;
    m = x;
  } else if (!(x == -INFINITY)) {
    s += expf(x - m);
  }
}

// One block per row of a vocabulary shard. vec: every row starts 16-byte aligned (an aligned
// base, C a multiple of the pack), so the first real / kN packs are read 16 bytes at a time.
template <typename T, typename I>
__global__ void shard_stats_kernel(float* max_out, float* sum_out, float* target_out, float* kept_out,
                                   const T* logits, const I* targets, int64_t C, int64_t real, int64_t offset,
                                   int64_t ignore, bool vec) {
  __shared__ float shared[64];
  constexpr int kN = Pack<T>::kN;
  const int64_t n = blockIdx.x;
  const T* x = logits + n * C;
  float m = -INFINITY, s = 0.0f;
  int64_t done = 0;
  if (vec) {
    const int64_t packs = real / kN;
    for (int64_t p = threadIdx.x; p < packs; p += blockDim.x) {
      const Pack<T> in = reinterpret_cast<const Pack<T>*>(x)[p];
#pragma unroll
      for (int j = 0; j < kN; ++j) online_add(m, s, to_float(in.v[j]));
    }
    done = packs * kN;
  }
  for (int64_t v = done + threadIdx.x; v < real; v += blockDim.x) online_add(m, s, to_float(x[v]));
  const MaxSum ms = block_max_sum(MaxSum{m, s}, shared);
  if (threadIdx.x == 0) {
    const int64_t t = static_cast<int64_t>(targets[n]);
    const int64_t col = t - offset;
    const bool ignored = t == ignore;
    max_out[n] = ms.m;
    sum_out[n] = ms.s;
    target_out[n] = !ignored && col >= 0 && col < real ? to_float(x[col]) : 0.0f;
    kept_out[n] = ignored ? 0.0f : 1.0f;
  }
}

// One gradient element of a kept row (ops.h, cross_entropy_shard_backward).
__device__ __forceinline__ float shard_grad(float z, int64_t c, int64_t real, int64_t col, float m, float factor,
                                            float g) {
  if (c >= real) return 0.0f;
  const float p = expf(z - m) * factor;
  return c == col ? p - g : p;
}

// One block per row; vec as in shard_stats_kernel (C a multiple of the pack: whole rows in packs).
template <typename T, typename I>
__global__ void shard_backward_kernel(T* dlogits, const float* grad, const T* logits, const I* targets,
                                      const float* max, const float* sum_exp, int64_t C, int64_t real,
                                      int64_t offset, int64_t ignore, bool vec) {
  constexpr int kN = Pack<T>::kN;
  const int64_t n = blockIdx.x;
  const int64_t t = static_cast<int64_t>(targets[n]);
  const T* x = logits + n * C;
  T* d = dlogits + n * C;
  const bool ignored = t == ignore;
  const float g = ignored ? 0.0f : grad[n];
  const float m = max[n];
  const float factor = ignored ? 0.0f : g / sum_exp[n];
  const int64_t col = ignored ? -1 : t - offset;
  int64_t done = 0;
  if (vec) {
    const int64_t packs = C / kN;
    for (int64_t p = threadIdx.x; p < packs; p += blockDim.x) {
      Pack<T> out;
      if (ignored) {
#pragma unroll
        for (int j = 0; j < kN; ++j) out.v[j] = from_float<T>(0.0f);
      } else {
        const Pack<T> in = reinterpret_cast<const Pack<T>*>(x)[p];
#pragma unroll
        for (int j = 0; j < kN; ++j) {
          out.v[j] = from_float<T>(shard_grad(to_float(in.v[j]), p * kN + j, real, col, m, factor, g));
        }
      }
      reinterpret_cast<Pack<T>*>(d)[p] = out;
    }
    done = packs * kN;
  }
  for (int64_t c = done + threadIdx.x; c < C; c += blockDim.x) {
    d[c] = from_float<T>(ignored ? 0.0f : shard_grad(to_float(x[c]), c, real, col, m, factor, g));
  }
}

// Whole rows in 16-byte packs: the base aligned and every row a whole number of packs.
template <typename T> bool rows_in_packs(const void* base, int64_t C) {
  return aligned16(base) && C % Pack<T>::kN == 0;
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

void cross_entropy_shard_stats(DType dtype, DType index_dtype, float* max, float* sum_exp, float* target_logit,
                               float* kept, const void* logits, const void* targets, int64_t N, int64_t C,
                               int64_t real, int64_t offset, int64_t ignore_index) {
  if (N == 0) return;
  dispatch_float(dtype, "cross_entropy_shard_stats", [&](auto vtag) {
    using T = decltype(vtag);
    dispatch_index(index_dtype, "cross_entropy_shard_stats", [&](auto itag) {
      using I = decltype(itag);
      shard_stats_kernel<<<static_cast<unsigned>(N), kRowThreads, 0, stream()>>>(
          max, sum_exp, target_logit, kept, static_cast<const T*>(logits), static_cast<const I*>(targets), C, real,
          offset, ignore_index, rows_in_packs<T>(logits, C));
      HT_CUDA_CHECK_LAUNCH();
    });
  });
}

void cross_entropy_shard_backward(DType dtype, DType index_dtype, void* dlogits, const float* grad,
                                  const void* logits, const void* targets, const float* max, const float* sum_exp,
                                  int64_t N, int64_t C, int64_t real, int64_t offset, int64_t ignore_index) {
  if (N == 0 || C == 0) return;
  dispatch_float(dtype, "cross_entropy_shard_backward", [&](auto vtag) {
    using T = decltype(vtag);
    dispatch_index(index_dtype, "cross_entropy_shard_backward", [&](auto itag) {
      using I = decltype(itag);
      const bool vec = rows_in_packs<T>(logits, C) && rows_in_packs<T>(dlogits, C);
      shard_backward_kernel<<<static_cast<unsigned>(N), kRowThreads, 0, stream()>>>(
          static_cast<T*>(dlogits), grad, static_cast<const T*>(logits), static_cast<const I*>(targets), max, sum_exp,
          C, real, offset, ignore_index, vec);
      HT_CUDA_CHECK_LAUNCH();
    });
  });
}

}  // namespace hetu::ops::cuda
