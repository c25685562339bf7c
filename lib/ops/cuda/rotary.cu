// CUDA rotary position embedding, as cpu/rotary.cpp: the caller's D/2 frequencies travel in
// the kernel's arguments (no copy), a (T, D/2) table of (cos, sin) is built from them in
// double (angles reach thousands of radians, where f32 sin/cos lose digits) and stored as
// f32 (one row per position: offset + t, or 0 .. max of the given positions), then every pair
// is rotated in f32 with its row's position:
//   out_i = x_i cos − x_{i+D/2} sin,  out_{i+D/2} = x_{i+D/2} cos + x_i sin  (sin negated if inverse)
// Shapes: x, out (B, T, H, D). Launch: table one thread per (t, i); apply one thread per
// (b, t, h, i < D/2), 256 threads, grid-stride.
#include "lib/ops/cuda/common.cuh"
#include "lib/ops/cuda/rotary.h"

namespace hetu::ops::cuda {
namespace {

struct Frequencies {  // by value: 2 KiB of kernel arguments
  double v[kRotaryMaxPairs];
};

__global__ void rotary_table_kernel(float2* table, int64_t T, int64_t half, int64_t offset, Frequencies inv_freq,
                                    double sign) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < T * half;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = e / half, i = e % half;
    const double angle = static_cast<double>(offset + t) * inv_freq.v[i];
    table[e] = make_float2(static_cast<float>(cos(angle)), static_cast<float>(sign * sin(angle)));
  }
}

template <typename T>
__global__ void rotary_apply_kernel(T* out, const T* x, const float2* table, const int64_t* positions, int64_t total,
                                    int64_t T_len, int64_t H, int64_t half) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = e % half, row = e / half;  // row = (b·T + t)·H + h
    const int64_t t = positions != nullptr ? positions[row / H] : (row / H) % T_len;
    const float2 cs = table[t * half + i];
    const int64_t lo = row * 2 * half + i, hi = lo + half;
    const float xl = to_float(x[lo]), xh = to_float(x[hi]);
    out[lo] = from_float<T>(xl * cs.x - xh * cs.y);
    out[hi] = from_float<T>(xh * cs.x + xl * cs.y);
  }
}

}  // namespace

void rotary(DType dtype, void* out, const void* x, int64_t B, int64_t T, int64_t H, int64_t D, int64_t position_offset,
            const double* inv_freq, bool inverse, const int64_t* positions) {
  const int64_t half = D / 2, total = B * T * H * half;
  if (total == 0) return;
  // half <= kRotaryMaxPairs: checked by ops::rotary.
  Frequencies frequencies{};
  for (int64_t i = 0; i < half; ++i) frequencies.v[i] = inv_freq[i];
  int64_t rows = T, first = position_offset;  // table rows: positions first .. first + rows - 1
  Workspace device_positions(positions != nullptr ? static_cast<size_t>(B * T) * sizeof(int64_t) : 1);
  if (positions != nullptr) {
    rows = 0;
    first = 0;
    for (int64_t i = 0; i < B * T; ++i) rows = std::max(rows, positions[i] + 1);
    HT_CUDA_CHECK(cudaMemcpyAsync(device_positions.as<void>(), positions, static_cast<size_t>(B * T) * sizeof(int64_t),
                                  cudaMemcpyHostToDevice, stream()));
  }
  Workspace table(static_cast<size_t>(rows * half) * sizeof(float2));
  rotary_table_kernel<<<grid_for(rows * half), kThreads, 0, stream()>>>(table.as<float2>(), rows, half, first,
                                                                        frequencies, inverse ? -1.0 : 1.0);
  HT_CUDA_CHECK_LAUNCH();
  const int64_t* row_positions = positions != nullptr ? device_positions.as<int64_t>() : nullptr;
  dispatch_float(dtype, "rotary", [&](auto tag) {
    using E = decltype(tag);
    rotary_apply_kernel<<<grid_for(total), kThreads, 0, stream()>>>(static_cast<E*>(out), static_cast<const E*>(x),
                                                                    table.as<float2>(), row_positions, total, T, H,
                                                                    half);
    HT_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace hetu::ops::cuda
