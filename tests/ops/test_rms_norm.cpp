// rms_norm and rms_norm_backward against naive double loops written here: every layout, odd
// row lengths, 1-d to 3-d inputs, f32 and f64; the backward against the Jacobian written out
// and against central finite differences of the forward in f64 (x and weight); argument errors.
#include <algorithm>
#include <cmath>
#include <functional>

#include "lib/ops/ops.h"
#include "tests/ops/op_test_utils.h"

using namespace hetu;
using namespace hetu::test;

namespace {

constexpr double kEps = 1e-6;

// out = x · rstd · w with rstd = 1/sqrt(mean(x²) + eps), per row.
std::pair<std::vector<double>, std::vector<double>> naive_rms_norm(const std::vector<double>& x,
                                                                   const std::vector<double>& w, double eps) {
  const size_t C = w.size(), N = x.size() / C;
  std::vector<double> out(x.size()), rstd(N);
  for (size_t n = 0; n < N; ++n) {
    double ms = 0;
    for (size_t i = 0; i < C; ++i) ms += x[n * C + i] * x[n * C + i] / static_cast<double>(C);
    rstd[n] = 1 / std::sqrt(ms + eps);
    for (size_t i = 0; i < C; ++i) out[n * C + i] = x[n * C + i] * rstd[n] * w[i];
  }
  return {out, rstd};
}

// dx_i = Σ_j g_j ∂out_j/∂x_i with ∂out_j/∂x_i = w_j (δ_ij rstd - x_i x_j rstd³ / C)
// (∂rstd/∂x_i = -x_i rstd³ / C); dw_i = Σ_rows g_i x_i rstd.
std::pair<std::vector<double>, std::vector<double>> naive_backward(const std::vector<double>& g,
                                                                   const std::vector<double>& x,
                                                                   const std::vector<double>& w,
                                                                   const std::vector<double>& rstd) {
  const size_t C = w.size(), N = x.size() / C;
  std::vector<double> dx(x.size(), 0.0), dw(C, 0.0);
  for (size_t n = 0; n < N; ++n) {
    const double r = rstd[n];
    for (size_t i = 0; i < C; ++i) {
      for (size_t j = 0; j < C; ++j) {
        const double drstd = -x[n * C + i] * r * r * r / static_cast<double>(C);  // ∂rstd/∂x_i
        const double jac = w[j] * ((i == j ? r : 0.0) + x[n * C + j] * drstd);
        dx[n * C + i] += g[n * C + j] * jac;
      }
      dw[i] += g[n * C + i] * x[n * C + i] * r;
    }
  }
  return {dx, dw};
}

}  // namespace

TEST_CASE("rms_norm matches the definition", "[rms_norm]") {
  uint64_t seed = 10000;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (const Shape& shape : row_shapes()) {
      for (Layout layout : {Layout::contiguous, Layout::transposed, Layout::strided}) {
        const int64_t C = shape.back();
        // Keep |x| >= 0.1 so C = 1 rows have rstd <= 10, not 1/sqrt(eps).
        const Tensor x = with_layout(random_tensor(shape, dtype, seed++, 0.1, 2.0), layout);
        const Tensor w = with_layout(random_tensor({C}, dtype, seed++, -1.5, 1.5), layout);
        INFO(shape_str(shape) << " " << to_string(layout) << " " << to_string(dtype));
        const auto [ref_out, ref_rstd] = naive_rms_norm(to_vector(x), to_vector(w), kEps);
        const auto [out, rstd] = ops::rms_norm(x, w, kEps);
        REQUIRE(out.shape() == shape);
        REQUIRE(rstd.shape() == Shape(shape.begin(), shape.end() - 1));
        CHECK((out.dtype() == dtype && rstd.dtype() == dtype));
        CHECK(max_abs_diff(out, ref_out) <= tolerance(dtype, 8));
        CHECK(max_abs_diff(rstd, ref_rstd) <= tolerance(dtype, 40));
      }
    }
  }
}

TEST_CASE("rms_norm_backward matches the Jacobian", "[rms_norm]") {
  uint64_t seed = 11000;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (const Shape& shape : row_shapes()) {
      for (Layout layout : {Layout::contiguous, Layout::transposed, Layout::strided}) {
        const int64_t C = shape.back();
        const Shape rows(shape.begin(), shape.end() - 1);
        INFO(shape_str(shape) << " " << to_string(layout) << " " << to_string(dtype));
        const Tensor x = with_layout(random_tensor(shape, dtype, seed++, -2.0, 2.0), layout);
        const Tensor w = with_layout(random_tensor({C}, dtype, seed++, -1.5, 1.5), layout);
        const Tensor g = with_layout(random_tensor(shape, dtype, seed++), layout);
        // The saved rstd comes from the naive forward, stored in dtype.
        const Tensor rstd =
            with_layout(tensor_from(naive_rms_norm(to_vector(x), to_vector(w), kEps).second, rows).to(dtype), layout);
        const auto [ref_dx, ref_dw] = naive_backward(to_vector(g), to_vector(x), to_vector(w), to_vector(rstd));
        const auto [dx, dweight] = ops::rms_norm_backward(g, x, w, rstd);
        REQUIRE(dx.shape() == shape);
        REQUIRE(dweight.shape() == Shape{C});
        // Relative to the largest |dx|: rows with small |x| (C = 1) have a large rstd.
        double largest = 1;
        for (double v : ref_dx) largest = std::max(largest, std::fabs(v));
        CHECK(max_abs_diff(dx, ref_dx) <= tolerance(dtype, 16 * largest));
        CHECK(max_abs_diff(dweight, ref_dw) <= tolerance(dtype, 16));
      }
    }
  }
}

TEST_CASE("rms_norm_backward matches finite differences in f64", "[rms_norm]") {
  uint64_t seed = 12000;
  for (const Shape& shape : {Shape{2, 3, 7}, Shape{4, 33}, Shape{7}}) {
    INFO(shape_str(shape));
    const int64_t C = shape.back();
    const Tensor x = random_tensor(shape, DType::f64, seed++, -2.0, 2.0);
    const Tensor w = random_tensor({C}, DType::f64, seed++, -1.5, 1.5);
    const std::vector<double> g = to_vector(random_tensor(shape, DType::f64, seed++));
    const auto loss = [&] { return dot(ops::rms_norm(x, w, kEps).out, g); };  // sum(out · g)
    const auto fwd = ops::rms_norm(x, w, kEps);
    const auto grads = ops::rms_norm_backward(tensor_from(g, shape), x, w, fwd.rstd);
    CHECK(max_abs_diff(grads.dx, numeric_grad(x, loss)) <= 1e-7);
    CHECK(max_abs_diff(grads.dweight, numeric_grad(w, loss)) <= 1e-7);
  }
}

TEST_CASE("rms_norm gradients sum over every row", "[rms_norm]") {
  // Many more rows than the kernel's chunks: dweight is the plain column sum of g · x · rstd.
  const Tensor x = random_tensor({1000, 3}, DType::f64, 1), w = ones({3}, DType::f64);
  const Tensor g = random_tensor({1000, 3}, DType::f64, 2);
  const auto fwd = ops::rms_norm(x, w, kEps);
  const auto grads = ops::rms_norm_backward(g, x, w, fwd.rstd);
  std::vector<double> col(3, 0.0);
  const std::vector<double> vg = to_vector(g), vx = to_vector(x), vr = to_vector(fwd.rstd);
  for (size_t i = 0; i < vg.size(); ++i) col[i % 3] += vg[i] * vx[i] * vr[i / 3];
  CHECK(max_abs_diff(grads.dweight, col) <= 1e-11);
  const auto empty_grads = ops::rms_norm_backward(zeros({0, 3}), zeros({0, 3}), ones({3}), zeros({0}));
  CHECK(max_abs_diff(empty_grads.dweight, {0, 0, 0}) == 0);
}

TEST_CASE("rms_norm argument errors", "[rms_norm]") {
  const Tensor x = random_tensor({4, 7}, DType::f32, 1), w = ones({7});
  const Tensor rstd = ops::rms_norm(x, w, kEps).rstd;
  CHECK_THROWS_WITH(ops::rms_norm(x, ones({8}), kEps),
                    Catch::Equals("rms_norm: weight shape (8,) does not match the last dim of x (4, 7) "
                                  "(expected (7,))"));
  CHECK_THROWS_WITH(ops::rms_norm(zeros({4, 7}, DType::i32), zeros({7}, DType::i32), kEps),
                    Catch::Equals("op rms_norm not implemented for device cpu / dtype i32"));
  CHECK_THROWS_WITH(ops::rms_norm(x, w.to(DType::f64), kEps), Catch::StartsWith("rms_norm: dtypes differ"));
  CHECK_THROWS_WITH(ops::rms_norm(x, w, std::nan("")), Catch::StartsWith("rms_norm: eps must be finite and >= 0"));
  CHECK_THROWS_WITH(ops::rms_norm(zeros({4, 0}), zeros({0}), kEps), Catch::StartsWith("rms_norm: the last dim of x"));
  CHECK_THROWS_WITH(ops::rms_norm_backward(x, x, w, zeros({7})),
                    Catch::StartsWith("rms_norm_backward: rstd shape (7,) does not match x (4, 7)"));
  CHECK_THROWS_WITH(ops::rms_norm_backward(zeros({4, 7}), x, ones({7, 1}), rstd),
                    Catch::StartsWith("rms_norm_backward: weight shape (7, 1)"));
}
