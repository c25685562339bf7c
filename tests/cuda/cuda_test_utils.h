// Helpers for the CUDA parity tests: skip (visibly) without a GPU, random CPU tensors, moving
// them to the GPU in a dtype, and comparing a GPU result with the CPU kernel's result.
// Note [CUDA parity tolerances]: inputs are rounded to the tested dtype first and the CPU
// reference runs in f32 on exactly those values, so only the GPU's arithmetic differs.
// |gpu - ref| <= atol·max|ref| + rtol·|ref| per element, with
//   f32:  atol 2e-5, rtol 1e-4 (f32 sums in another order; cuBLAS without TF32)
//   bf16: atol 1e-2, rtol 2e-2 (one bf16 rounding of the output: 2^-9 relative, plus bf16
//         intermediates in attention (P, dS) and in the matmul operands of backward passes)
//   f16:  bf16's bounds (f16 rounds 8x finer, 2^-12 relative, with the same intermediates;
//         the test values stay far inside f16's range)
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "lib/core/cuda_runtime.h"
#include "lib/core/rng.h"
#include "lib/core/tensor.h"

namespace hetu::test {

// Prints the marker that ctest's SKIP_REGULAR_EXPRESSION turns into "Skipped".
inline bool skip_without_gpu() {
  if (cuda::is_available()) return false;
  std::cout << "HETU_SKIP: no usable CUDA device: " << cuda::unavailable_reason() << std::endl;
  WARN("skipped: no usable CUDA device: " << cuda::unavailable_reason());
  return true;
}
#define HT_REQUIRE_GPU()                       \
  do {                                         \
    if (::hetu::test::skip_without_gpu()) return; \
  } while (0)

inline const Device kGpu = Device::cuda(0);
inline const std::vector<DType> kGpuDtypes = {DType::f32, DType::bf16, DType::f16};

struct Tolerance {
  double atol, rtol;
};
inline Tolerance tolerance(DType dtype) { return dtype != DType::f32 ? Tolerance{1e-2, 2e-2} : Tolerance{2e-5, 1e-4}; }

// Uniform in [low, high) on the CPU, f32.
inline Tensor random_cpu(const Shape& shape, uint64_t seed, double low = -1.0, double high = 1.0) {
  std::vector<double> values(static_cast<size_t>(shape_numel(shape)));
  CounterRng rng(seed, "cuda_test");
  rng.fill_uniform(values.data(), 0, static_cast<int64_t>(values.size()), low, high);
  return tensor_from(values, shape).to(DType::f32);
}

// x's values rounded to `dtype`, as f32 on the CPU: the reference's input.
inline Tensor rounded(const Tensor& x, DType dtype) { return x.to(dtype).to(DType::f32); }
// x's values in `dtype` on the GPU.
inline Tensor gpu(const Tensor& x, DType dtype) { return x.to(dtype).to(kGpu); }

inline void check_close(const Tensor& actual, const Tensor& expected, Tolerance tol, const std::string& what) {
  INFO(what);
  REQUIRE(actual.shape() == expected.shape());
  const std::vector<double> a = to_vector(actual), e = to_vector(expected);
  double scale = 0;
  for (double v : e) scale = std::max(scale, std::fabs(v));
  size_t bad = 0, worst_i = 0;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double err = std::fabs(a[i] - e[i]);
    const double allowed = tol.atol * scale + tol.rtol * std::fabs(e[i]);
    if (!(err <= allowed)) ++bad;
    if (!(err <= worst)) worst = err, worst_i = i;
  }
  INFO("max |err| " << worst << " at " << worst_i << " (gpu " << (a.empty() ? 0 : a[worst_i]) << ", cpu "
                    << (e.empty() ? 0 : e[worst_i]) << "), max |ref| " << scale << ", " << bad << " of " << a.size()
                    << " outside atol " << tol.atol << " rtol " << tol.rtol);
  CHECK(bad == 0);
}

}  // namespace hetu::test
