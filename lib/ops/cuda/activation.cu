// CUDA GELU (tanh approximation) and SiLU, forward and fused backward, in f32 arithmetic.
// Shapes: n contiguous elements. Launch: map1/map2 of common.cuh (16-byte vector loads,
// 256 threads, grid-stride). Formulas as lib/ops/cpu/activation.cpp:
//   gelu(x) = 0.5x(1 + tanh(u)), u = √(2/π)(x + 0.044715x³)
//   gelu'(x) = 0.5(1 + tanh u) + 0.5x(1 - tanh² u)·√(2/π)(1 + 3·0.044715x²)
//   silu(x) = x σ(x),  silu'(x) = σ(x)(1 + x(1 - σ(x)))
#include "lib/ops/cuda/activation.h"
#include "lib/ops/cuda/common.cuh"

namespace hetu::ops::cuda {
namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCoeff = 0.044715f;

struct GeluForward {
  __device__ float operator()(float x) const {
    const float u = kSqrt2OverPi * (x + kCoeff * x * x * x);
    return 0.5f * x * (1.0f + tanhf(u));
  }
};
struct GeluBackward {
  __device__ float operator()(float g, float x) const {
    const float u = kSqrt2OverPi * (x + kCoeff * x * x * x);
    const float t = tanhf(u);
    const float du = kSqrt2OverPi * (1.0f + 3.0f * kCoeff * x * x);
    return g * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du);
  }
};
struct SiluForward {
  __device__ float operator()(float x) const { return x / (1.0f + expf(-x)); }
};
struct SiluBackward {
  __device__ float operator()(float g, float x) const {
    const float s = 1.0f / (1.0f + expf(-x));
    return g * s * (1.0f + x * (1.0f - s));
  }
};

template <typename F> void forward(const char* op, DType dtype, void* out, const void* x, int64_t n) {
  dispatch_float(dtype, op, [&](auto tag) {
    using T = decltype(tag);
    launch_map1(static_cast<T*>(out), static_cast<const T*>(x), n, F{});
  });
}
template <typename F>
void backward(const char* op, DType dtype, void* dx, const void* grad, const void* x, int64_t n) {
  dispatch_float(dtype, op, [&](auto tag) {
    using T = decltype(tag);
    launch_map2(static_cast<T*>(dx), static_cast<const T*>(grad), static_cast<const T*>(x), n, F{});
  });
}

}  // namespace

void gelu_forward(DType dtype, void* out, const void* x, int64_t n) { forward<GeluForward>("gelu", dtype, out, x, n); }
void gelu_backward(DType dtype, void* dx, const void* grad, const void* x, int64_t n) {
  backward<GeluBackward>("gelu_backward", dtype, dx, grad, x, n);
}
void silu_forward(DType dtype, void* out, const void* x, int64_t n) { forward<SiluForward>("silu", dtype, out, x, n); }
void silu_backward(DType dtype, void* dx, const void* grad, const void* x, int64_t n) {
  backward<SiluBackward>("silu_backward", dtype, dx, grad, x, n);
}

}  // namespace hetu::ops::cuda
