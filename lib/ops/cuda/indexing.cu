// CUDA gather (embedding, index_select) and scatter-add backward, deterministic.
// gather: one thread per element of out (outer, k, inner), grid-stride, 256 threads; rows
//   whose bytes are a multiple of 16 (and aligned) move as 16-byte packs.
// scatter_add: (index[j], j) pairs are sorted by index with CUB's stable radix sort, so
//   equal indices keep ascending j; then grid (k, min(outer, 65535)) of 256 threads: the
//   block at sorted position p does work only if p starts a run of one index, and sums that
//   run's grad rows in order into out (zeroed first). No atomics: the same bits every run.
#include <cub/device/device_radix_sort.cuh>

#include "lib/ops/cuda/common.cuh"
#include "lib/ops/cuda/indexing.h"

namespace hetu::ops::cuda {
namespace {

template <typename I>
__global__ void out_of_range_kernel(unsigned long long* first, const I* index, int64_t n, int64_t limit) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t v = static_cast<int64_t>(index[i]);
    if (v < 0 || v >= limit) atomicMin(first, static_cast<unsigned long long>(i));
  }
}

template <typename E, typename I>
__global__ void gather_kernel(E* out, const E* src, const I* index, int64_t outer, int64_t rows, int64_t k,
                              int64_t inner) {
  const int64_t total = outer * k * inner;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = e % inner, j = (e / inner) % k, o = e / (inner * k);
    out[e] = src[(o * rows + static_cast<int64_t>(index[j])) * inner + i];
  }
}

template <typename T, typename I>
__global__ void segment_sum_kernel(T* out, const T* grad, const I* keys, const int32_t* order, int64_t outer,
                                   int64_t rows, int64_t k, int64_t inner) {
  const int64_t p = blockIdx.x;
  if (p > 0 && keys[p] == keys[p - 1]) return;
  const int64_t row = static_cast<int64_t>(keys[p]);
  int64_t end = p + 1;
  while (end < k && keys[end] == keys[p]) ++end;
  for (int64_t o = blockIdx.y; o < outer; o += gridDim.y) {
    for (int64_t i = threadIdx.x; i < inner; i += blockDim.x) {
      float acc = 0.0f;
      for (int64_t q = p; q < end; ++q) acc += to_float(grad[(o * k + order[q]) * inner + i]);
      out[(o * rows + row) * inner + i] = from_float<T>(acc);
    }
  }
}

__global__ void iota_kernel(int32_t* out, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = static_cast<int32_t>(i);
  }
}

int bits_for(int64_t rows) {
  int bits = 1;
  while (bits < 63 && (int64_t{1} << bits) < rows) ++bits;
  return bits;
}

}  // namespace

int64_t first_out_of_range(DType index_dtype, const void* index, int64_t n, int64_t limit, int64_t* bad_value) {
  if (n == 0) return -1;
  int64_t pos = -1;
  dispatch_index(index_dtype, "index check", [&](auto tag) {
    using I = decltype(tag);
    Workspace first(sizeof(unsigned long long));
    const unsigned long long none = static_cast<unsigned long long>(n);
    HT_CUDA_CHECK(cudaMemcpyAsync(first.as<void>(), &none, sizeof(none), cudaMemcpyHostToDevice, stream()));
    out_of_range_kernel<<<grid_for(n), kThreads, 0, stream()>>>(first.as<unsigned long long>(),
                                                               static_cast<const I*>(index), n, limit);
    HT_CUDA_CHECK_LAUNCH();
    unsigned long long host = 0;
    HT_CUDA_CHECK(cudaMemcpyAsync(&host, first.as<void>(), sizeof(host), cudaMemcpyDeviceToHost, stream()));
    HT_CUDA_CHECK(cudaStreamSynchronize(stream()));
    if (host < none) {
      pos = static_cast<int64_t>(host);
      I value{};
      HT_CUDA_CHECK(cudaMemcpy(&value, static_cast<const I*>(index) + pos, sizeof(I), cudaMemcpyDeviceToHost));
      *bad_value = static_cast<int64_t>(value);
    }
  });
  return pos;
}

void gather_rows(DType dtype, DType index_dtype, void* out, const void* src, const void* index, int64_t outer,
                 int64_t rows, int64_t k, int64_t inner) {
  const int64_t total = outer * k * inner;
  if (total == 0) return;
  const size_t esize = dtype_size(dtype);
  dispatch_index(index_dtype, "gather", [&](auto tag) {
    using I = decltype(tag);
    const I* idx = static_cast<const I*>(index);
    if ((static_cast<size_t>(inner) * esize) % 16 == 0 && aligned16(out) && aligned16(src)) {
      using E = Pack<float>;
      const int64_t packs = static_cast<int64_t>(static_cast<size_t>(inner) * esize / 16);
      gather_kernel<<<grid_for(outer * k * packs), kThreads, 0, stream()>>>(
          static_cast<E*>(out), static_cast<const E*>(src), idx, outer, rows, k, packs);
    } else if (esize == 4) {
      gather_kernel<<<grid_for(total), kThreads, 0, stream()>>>(static_cast<float*>(out),
                                                              static_cast<const float*>(src), idx, outer, rows, k,
                                                              inner);
    } else {
      gather_kernel<<<grid_for(total), kThreads, 0, stream()>>>(static_cast<bf16*>(out), static_cast<const bf16*>(src),
                                                              idx, outer, rows, k, inner);
    }
    HT_CUDA_CHECK_LAUNCH();
  });
}

void scatter_add_rows(DType dtype, DType index_dtype, void* out, const void* grad, const void* index, int64_t outer,
                      int64_t rows, int64_t k, int64_t inner) {
  const size_t out_bytes = static_cast<size_t>(outer * rows * inner) * dtype_size(dtype);
  if (out_bytes > 0) HT_CUDA_CHECK(cudaMemsetAsync(out, 0, out_bytes, stream()));
  if (k == 0 || outer == 0 || inner == 0) return;
  if (k > 2147483647) throw_cuda_error(__FILE__, __LINE__, "scatter_add_rows", "more than 2^31 - 1 indices");
  dispatch_float(dtype, "scatter_add", [&](auto vtag) {
    using T = decltype(vtag);
    dispatch_index(index_dtype, "scatter_add", [&](auto itag) {
      using I = decltype(itag);
      const int n = static_cast<int>(k);
      Workspace keys(static_cast<size_t>(k) * sizeof(I)), order_in(static_cast<size_t>(k) * sizeof(int32_t)),
          order(static_cast<size_t>(k) * sizeof(int32_t));
      iota_kernel<<<grid_for(k), kThreads, 0, stream()>>>(order_in.as<int32_t>(), k);
      HT_CUDA_CHECK_LAUNCH();
      size_t temp_bytes = 0;
      HT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, static_cast<const I*>(index), keys.as<I>(),
                                                    order_in.as<int32_t>(), order.as<int32_t>(), n, 0,
                                                    bits_for(rows), stream()));
      Workspace temp(temp_bytes);
      HT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.as<void>(), temp_bytes, static_cast<const I*>(index),
                                                    keys.as<I>(), order_in.as<int32_t>(), order.as<int32_t>(), n, 0,
                                                    bits_for(rows), stream()));
      const dim3 grid(static_cast<unsigned>(k), static_cast<unsigned>(outer < 65535 ? outer : 65535));
      const int threads = inner >= 256 ? 256 : inner >= 64 ? 64 : 32;
      segment_sum_kernel<<<grid, threads, 0, stream()>>>(static_cast<T*>(out), static_cast<const T*>(grad),
                                                        keys.as<I>(), order.as<int32_t>(), outer, rows, k, inner);
      HT_CUDA_CHECK_LAUNCH();
    });
  });
}

}  // namespace hetu::ops::cuda
