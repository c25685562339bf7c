// Helpers for op tests: deterministic random tensors, non-contiguous copies of a tensor
// (same logical values, other strides), and comparison with a reference computed by a
// naive loop in the test.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "lib/core/rng.h"
#include "lib/core/tensor.h"

namespace hetu::test {

// Uniform in [low, high), from the counter-based RNG (f32 or f64).
inline Tensor random_tensor(const Shape& shape, DType dtype, uint64_t seed, double low = -1.0, double high = 1.0) {
  std::vector<double> values(static_cast<size_t>(shape_numel(shape)));
  CounterRng rng(seed, "test");
  rng.fill_uniform(values.data(), 0, static_cast<int64_t>(values.size()), low, high);
  Tensor out = empty(shape, dtype);
  Tensor src = tensor_from(values, shape);
  out.copy_from(src);
  return out;
}

// The ways a test presents the same logical values to an op.
enum class Layout { contiguous, transposed, strided };
inline const char* to_string(Layout layout) {
  return layout == Layout::contiguous ? "contiguous" : layout == Layout::transposed ? "transposed" : "strided";
}

// Same values, other memory layout: `transposed` stores the last two dims swapped (a
// transpose view of a contiguous buffer), `strided` reads every second element of a buffer
// twice as wide in the last dim (a slice view). 0-d and 1-d tensors get `strided` only.
inline Tensor with_layout(const Tensor& t, Layout layout) {
  if (layout == Layout::contiguous || t.dim() == 0) return t.contiguous();
  if (layout == Layout::transposed && t.dim() >= 2) {
    Tensor buffer = t.transpose(-1, -2).contiguous();  // memory holds the swapped order
    Tensor view = buffer.transpose(-1, -2);           // logical values as t
    REQUIRE((!view.is_contiguous() || t.size(-1) == 1 || t.size(-2) == 1));
    return view;
  }
  Shape wide = t.shape();
  wide.back() *= 2;
  Tensor buffer = zeros(wide, t.dtype());
  Tensor view = buffer.slice(-1, 0, wide.back(), 2);
  view.copy_from(t);
  return view;
}

inline double max_abs_diff(const Tensor& actual, const std::vector<double>& expected) {
  std::vector<double> a = to_vector(actual);
  REQUIRE(a.size() == expected.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) != std::isnan(expected[i])) return INFINITY;
    if (!std::isnan(a[i])) worst = std::max(worst, std::fabs(a[i] - expected[i]));
  }
  return worst;
}

// Tolerance for comparing against a double-precision naive loop.
inline double tolerance(DType dtype, double scale = 1.0) { return (dtype == DType::f64 ? 1e-12 : 2e-5) * scale; }

// max |actual - expected| / max(1, max |expected|): a relative difference that stays an
// absolute one for values below 1.
inline double rel_diff(const Tensor& actual, const std::vector<double>& expected) {
  double scale = 1;
  for (double e : expected) scale = std::max(scale, std::fabs(e));
  return max_abs_diff(actual, expected) / scale;
}
inline double rel_diff(const Tensor& actual, const Tensor& expected) { return rel_diff(actual, to_vector(expected)); }
// The bound for rel_diff of a fused op against a double loop or its unfused ops.
inline double rel_tolerance(DType dtype) { return dtype == DType::f64 ? 1e-12 : 1e-5; }

// Shapes for row-wise ops: last dim C in {1, 7, 33, 129}, 0 to 2 leading dims.
inline std::vector<Shape> row_shapes() {
  std::vector<Shape> shapes;
  for (int64_t C : {1, 7, 33, 129}) {
    for (Shape shape : {Shape{}, Shape{1}, Shape{5}, Shape{2, 3}}) {
      shape.push_back(C);
      shapes.push_back(shape);
    }
  }
  return shapes;
}

// Σ a ∘ b, with a tensor's values in row-major order.
inline double dot(const Tensor& a, const std::vector<double>& b) {
  const std::vector<double> va = to_vector(a);
  double s = 0;
  for (size_t i = 0; i < va.size(); ++i) s += va[i] * b[i];
  return s;
}

// d loss / d theta by central differences; theta is contiguous f64 and is perturbed in place.
inline std::vector<double> numeric_grad(const Tensor& theta, const std::function<double()>& loss, double h = 1e-6) {
  std::vector<double> grad(static_cast<size_t>(theta.numel()));
  double* p = theta.data<double>();
  for (size_t i = 0; i < grad.size(); ++i) {
    const double saved = p[i];
    p[i] = saved + h;
    const double up = loss();
    p[i] = saved - h;
    const double down = loss();
    p[i] = saved;
    grad[i] = (up - down) / (2 * h);
  }
  return grad;
}

}  // namespace hetu::test
