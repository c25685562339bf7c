// CUDA elementwise kernels. Shapes: any, flattened to n elements.
// Launch: contiguous operands take map1/map2 of common.cuh (16-byte vector loads when aligned:
// 4 f32 or 8 bf16 per thread per step), 256 threads, grid-stride, at most 65536 blocks.
// Broadcast or strided binary operands take a strided kernel (offsets from the flat index).
#include "lib/ops/cuda/common.cuh"
#include "lib/ops/cuda/elementwise.h"

namespace hetu::ops::cuda {
namespace {

template <BinaryKind K> struct Binary {
  __device__ float operator()(float a, float b) const {
    if constexpr (K == BinaryKind::add) return a + b;
    else if constexpr (K == BinaryKind::sub) return a - b;
    else if constexpr (K == BinaryKind::mul) return a * b;
    else return a / b;
  }
};

template <UnaryKind K> struct Unary {
  float s;
  __device__ float operator()(float x) const {
    if constexpr (K == UnaryKind::neg) return -x;
    else if constexpr (K == UnaryKind::exp) return expf(x);
    else if constexpr (K == UnaryKind::log) return logf(x);
    else if constexpr (K == UnaryKind::sqrt) return sqrtf(x);
    else if constexpr (K == UnaryKind::rsqrt) return rsqrtf(x);
    else if constexpr (K == UnaryKind::tanh) return tanhf(x);
    else if constexpr (K == UnaryKind::relu) return x > 0.0f ? x : 0.0f;
    else if constexpr (K == UnaryKind::add_scalar) return x + s;
    else return x * s;
  }
};

struct ReluBackward {
  __device__ float operator()(float g, float x) const { return x > 0.0f ? g : 0.0f; }
};

template <typename T, typename F>
__global__ void strided_binary_kernel(T* out, const T* a, const T* b, hetu::cuda::StridedSpace s, F f) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < s.numel;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[strided_offset(s, 0, i)] =
        from_float<T>(f(to_float(a[strided_offset(s, 1, i)]), to_float(b[strided_offset(s, 2, i)])));
  }
}

bool contiguous_space(const hetu::cuda::StridedSpace& s) {
  if (s.ndim == 0) return true;
  if (s.ndim != 1) return false;
  for (int k = 0; k < 3; ++k) {
    if (s.strides[k][0] != 1) return false;
  }
  return true;
}

template <typename T, BinaryKind K>
void run_binary(T* out, const T* a, const T* b, const hetu::cuda::StridedSpace& s) {
  if (contiguous_space(s)) return launch_map2(out, a, b, s.numel, Binary<K>{});
  strided_binary_kernel<<<grid_for(s.numel), kThreads, 0, stream()>>>(out, a, b, s, Binary<K>{});
  HT_CUDA_CHECK_LAUNCH();
}

template <typename T, UnaryKind K> void run_unary(T* out, const T* x, int64_t n, float scalar) {
  launch_map1(out, x, n, Unary<K>{scalar});
}

}  // namespace

void binary(BinaryKind kind, DType dtype, void* out, const void* a, const void* b,
            const hetu::cuda::StridedSpace& space) {
  if (space.numel == 0) return;
  dispatch_float(dtype, "binary", [&](auto tag) {
    using T = decltype(tag);
    T* o = static_cast<T*>(out);
    const T* pa = static_cast<const T*>(a);
    const T* pb = static_cast<const T*>(b);
    switch (kind) {
      case BinaryKind::add: return run_binary<T, BinaryKind::add>(o, pa, pb, space);
      case BinaryKind::sub: return run_binary<T, BinaryKind::sub>(o, pa, pb, space);
      case BinaryKind::mul: return run_binary<T, BinaryKind::mul>(o, pa, pb, space);
      case BinaryKind::div: return run_binary<T, BinaryKind::div>(o, pa, pb, space);
    }
  });
}

void unary(UnaryKind kind, DType dtype, void* out, const void* x, int64_t n, float scalar) {
  dispatch_float(dtype, "unary", [&](auto tag) {
    using T = decltype(tag);
    T* o = static_cast<T*>(out);
    const T* px = static_cast<const T*>(x);
    switch (kind) {
      case UnaryKind::neg: return run_unary<T, UnaryKind::neg>(o, px, n, scalar);
      case UnaryKind::exp: return run_unary<T, UnaryKind::exp>(o, px, n, scalar);
      case UnaryKind::log: return run_unary<T, UnaryKind::log>(o, px, n, scalar);
      case UnaryKind::sqrt: return run_unary<T, UnaryKind::sqrt>(o, px, n, scalar);
      case UnaryKind::rsqrt: return run_unary<T, UnaryKind::rsqrt>(o, px, n, scalar);
      case UnaryKind::tanh: return run_unary<T, UnaryKind::tanh>(o, px, n, scalar);
      case UnaryKind::relu: return run_unary<T, UnaryKind::relu>(o, px, n, scalar);
      case UnaryKind::add_scalar: return run_unary<T, UnaryKind::add_scalar>(o, px, n, scalar);
      case UnaryKind::mul_scalar: return run_unary<T, UnaryKind::mul_scalar>(o, px, n, scalar);
    }
  });
}

void relu_backward(DType dtype, void* dx, const void* grad, const void* x, int64_t n) {
  dispatch_float(dtype, "relu_backward", [&](auto tag) {
    using T = decltype(tag);
    launch_map2(static_cast<T*>(dx), static_cast<const T*>(grad), static_cast<const T*>(x), n, ReluBackward{});
  });
}

}  // namespace hetu::ops::cuda
