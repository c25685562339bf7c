// layer_norm and layer_norm_backward against naive double loops written here: every layout,
// odd row lengths, 1-d to 3-d inputs, f32 and f64; the backward against the Jacobian written
// out and against central finite differences of the forward in f64 (x, weight and bias);
// rows with a large offset; argument errors.
#include <cmath>
#include <functional>

#include "lib/ops/ops.h"
#include "tests/ops/op_test_utils.h"

using namespace hetu;
using namespace hetu::test;

namespace {

constexpr double kEps = 1e-5;

struct NaiveLayerNorm {
  std::vector<double> out, mean, rstd;
};

// Straight from the definition: mean, biased variance, normalise, scale and shift.
NaiveLayerNorm naive_layer_norm(const std::vector<double>& x, const std::vector<double>& w,
                                const std::vector<double>& b, double eps) {
  const size_t C = w.size(), N = x.size() / C;
  NaiveLayerNorm r{std::vector<double>(x.size()), std::vector<double>(N), std::vector<double>(N)};
  for (size_t n = 0; n < N; ++n) {
    double mean = 0, var = 0;
    for (size_t i = 0; i < C; ++i) mean += x[n * C + i] / static_cast<double>(C);
    for (size_t i = 0; i < C; ++i) var += (x[n * C + i] - mean) * (x[n * C + i] - mean) / static_cast<double>(C);
    r.mean[n] = mean;
    r.rstd[n] = 1 / std::sqrt(var + eps);
    for (size_t i = 0; i < C; ++i) r.out[n * C + i] = (x[n * C + i] - mean) * r.rstd[n] * w[i] + b[i];
  }
  return r;
}

// dx_i = Σ_j g_j w_j ∂xhat_j/∂x_i with ∂xhat_j/∂x_i = rstd (δ_ij - 1/C - xhat_i xhat_j / C);
// dw_i = Σ_rows g_i xhat_i; db_i = Σ_rows g_i.
NaiveLayerNorm naive_backward(const std::vector<double>& g, const std::vector<double>& x,
                              const std::vector<double>& w, const std::vector<double>& mean,
                              const std::vector<double>& rstd) {
  const size_t C = w.size(), N = x.size() / C;
  NaiveLayerNorm d{std::vector<double>(x.size(), 0.0), std::vector<double>(C, 0.0), std::vector<double>(C, 0.0)};
  const auto xhat = [&](size_t n, size_t i) { return (x[n * C + i] - mean[n]) * rstd[n]; };
  for (size_t n = 0; n < N; ++n) {
    for (size_t i = 0; i < C; ++i) {
      for (size_t j = 0; j < C; ++j) {
        const double jac = rstd[n] * ((i == j ? 1.0 : 0.0) - 1.0 / static_cast<double>(C) -
                                      xhat(n, i) * xhat(n, j) / static_cast<double>(C));
        d.out[n * C + i] += g[n * C + j] * w[j] * jac;
      }
      d.mean[i] += g[n * C + i] * xhat(n, i);  // dweight
      d.rstd[i] += g[n * C + i];               // dbias
    }
  }
  return d;
}

}  // namespace

TEST_CASE("layer_norm matches the definition", "[layer_norm]") {
  uint64_t seed = 6000;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (const Shape& shape : row_shapes()) {
      for (Layout layout : {Layout::contiguous, Layout::transposed, Layout::strided}) {
        const int64_t C = shape.back();
        const Tensor x = with_layout(random_tensor(shape, dtype, seed++, -2.0, 2.0), layout);
        const Tensor w = with_layout(random_tensor({C}, dtype, seed++, 0.5, 1.5), layout);
        const Tensor b = with_layout(random_tensor({C}, dtype, seed++), layout);
        INFO(shape_str(shape) << " " << to_string(layout) << " " << to_string(dtype));
        const NaiveLayerNorm ref = naive_layer_norm(to_vector(x), to_vector(w), to_vector(b), kEps);
        const auto [out, mean, rstd] = ops::layer_norm(x, w, b, kEps);
        const Shape rows(shape.begin(), shape.end() - 1);
        REQUIRE(out.shape() == shape);
        REQUIRE(mean.shape() == rows);
        REQUIRE(rstd.shape() == rows);
        CHECK((out.dtype() == dtype && mean.dtype() == dtype && rstd.dtype() == dtype));
        CHECK(max_abs_diff(out, ref.out) <= tolerance(dtype, 8));
        CHECK(max_abs_diff(mean, ref.mean) <= tolerance(dtype));
        // C = 1 rows have variance 0 and rstd = 1/sqrt(eps) ~ 316.
        CHECK(max_abs_diff(rstd, ref.rstd) <= tolerance(dtype, C == 1 ? 400 : 8));
      }
    }
  }
}

TEST_CASE("layer_norm_backward matches the Jacobian", "[layer_norm]") {
  uint64_t seed = 7000;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (const Shape& shape : row_shapes()) {
      for (Layout layout : {Layout::contiguous, Layout::transposed, Layout::strided}) {
        const int64_t C = shape.back();
        const Shape rows(shape.begin(), shape.end() - 1);
        INFO(shape_str(shape) << " " << to_string(layout) << " " << to_string(dtype));
        const Tensor x = with_layout(random_tensor(shape, dtype, seed++, -2.0, 2.0), layout);
        const Tensor w = with_layout(random_tensor({C}, dtype, seed++, 0.5, 1.5), layout);
        const Tensor g = with_layout(random_tensor(shape, dtype, seed++), layout);
        // The saved statistics come from the naive forward, stored in dtype.
        const std::vector<double> zero(static_cast<size_t>(C), 0.0);
        const NaiveLayerNorm fwd = naive_layer_norm(to_vector(x), to_vector(w), zero, kEps);
        const Tensor mean = with_layout(tensor_from(fwd.mean, rows).to(dtype), layout);
        const Tensor rstd = with_layout(tensor_from(fwd.rstd, rows).to(dtype), layout);
        const NaiveLayerNorm ref = naive_backward(to_vector(g), to_vector(x), to_vector(w), to_vector(mean),
                                                  to_vector(rstd));
        const auto [dx, dweight, dbias] = ops::layer_norm_backward(g, x, w, mean, rstd);
        REQUIRE(dx.shape() == shape);
        REQUIRE(dweight.shape() == Shape{C});
        REQUIRE(dbias.shape() == Shape{C});
        CHECK(max_abs_diff(dx, ref.out) <= tolerance(dtype, 16));
        CHECK(max_abs_diff(dweight, ref.mean) <= tolerance(dtype, 16));
        CHECK(max_abs_diff(dbias, ref.rstd) <= tolerance(dtype, 16));
      }
    }
  }
}

TEST_CASE("layer_norm_backward matches finite differences in f64", "[layer_norm]") {
  uint64_t seed = 8000;
  for (const Shape& shape : {Shape{2, 3, 7}, Shape{4, 33}, Shape{7}}) {
    INFO(shape_str(shape));
    const int64_t C = shape.back();
    const Tensor x = random_tensor(shape, DType::f64, seed++, -2.0, 2.0);
    const Tensor w = random_tensor({C}, DType::f64, seed++, 0.5, 1.5);
    const Tensor b = random_tensor({C}, DType::f64, seed++);
    const std::vector<double> g = to_vector(random_tensor(shape, DType::f64, seed++));
    const auto loss = [&] { return dot(ops::layer_norm(x, w, b, kEps).out, g); };  // sum(out · g)
    const auto fwd = ops::layer_norm(x, w, b, kEps);
    const auto grads = ops::layer_norm_backward(tensor_from(g, shape), x, w, fwd.mean, fwd.rstd);
    CHECK(max_abs_diff(grads.dx, numeric_grad(x, loss)) <= 1e-7);
    CHECK(max_abs_diff(grads.dweight, numeric_grad(w, loss)) <= 1e-7);
    CHECK(max_abs_diff(grads.dbias, numeric_grad(b, loss)) <= 1e-7);
  }
}

TEST_CASE("layer_norm keeps its precision on rows with a large offset", "[layer_norm]") {
  // Rows around 1e4 with spread 1: a one-pass E[x²] - E[x]² in f32 would lose every digit.
  uint64_t seed = 9000;
  for (DType dtype : {DType::f32, DType::f64}) {
    INFO(to_string(dtype));
    const Tensor x = random_tensor({6, 129}, dtype, seed++, 1e4 - 1, 1e4 + 1);
    const Tensor w = ones({129}, dtype), b = zeros({129}, dtype);
    const NaiveLayerNorm ref = naive_layer_norm(to_vector(x), to_vector(w), to_vector(b), kEps);
    const auto [out, mean, rstd] = ops::layer_norm(x, w, b, kEps);
    // In f64 the mean itself carries ~1e4·2^-52 of rounding, in the reference as in the kernel.
    CHECK(max_abs_diff(out, ref.out) <= tolerance(dtype, dtype == DType::f64 ? 100 : 8));
    CHECK(max_abs_diff(rstd, ref.rstd) <= tolerance(dtype, 8));
  }
}

TEST_CASE("layer_norm gradients sum over every row", "[layer_norm]") {
  // Many more rows than the kernel's chunks: dbias must be the plain column sum of grad.
  const Tensor x = random_tensor({1000, 3}, DType::f64, 1), w = ones({3}, DType::f64);
  const Tensor g = random_tensor({1000, 3}, DType::f64, 2);
  const auto fwd = ops::layer_norm(x, w, zeros({3}, DType::f64), kEps);
  const auto grads = ops::layer_norm_backward(g, x, w, fwd.mean, fwd.rstd);
  std::vector<double> col(3, 0.0);
  const std::vector<double> vg = to_vector(g);
  for (size_t i = 0; i < vg.size(); ++i) col[i % 3] += vg[i];
  CHECK(max_abs_diff(grads.dbias, col) <= 1e-12);
  // The same bits whatever the thread count (see Note [Deterministic parameter gradients]).
  const int threads = ops::num_threads();
  for (int t : {1, 3, 7}) {
    ops::set_num_threads(t);
    const auto again = ops::layer_norm_backward(g, x, w, fwd.mean, fwd.rstd);
    CHECK(to_vector(again.dweight) == to_vector(grads.dweight));
    CHECK(to_vector(again.dbias) == to_vector(grads.dbias));
  }
  ops::set_num_threads(threads);
  // No rows: zero parameter gradients.
  const auto empty_grads = ops::layer_norm_backward(zeros({0, 3}), zeros({0, 3}), ones({3}), zeros({0}), zeros({0}));
  CHECK(max_abs_diff(empty_grads.dweight, {0, 0, 0}) == 0);
  CHECK(max_abs_diff(empty_grads.dbias, {0, 0, 0}) == 0);
}

TEST_CASE("layer_norm argument errors", "[layer_norm]") {
  const Tensor x = random_tensor({4, 7}, DType::f32, 1), w = ones({7}), b = zeros({7});
  const auto [out, mean, rstd] = ops::layer_norm(x, w, b, kEps);
  CHECK_THROWS_WITH(ops::layer_norm(x, ones({8}), b, kEps),
                    Catch::Equals("layer_norm: weight shape (8,) does not match the last dim of x (4, 7) "
                                  "(expected (7,))"));
  CHECK_THROWS_WITH(ops::layer_norm(x, w, zeros({7, 1}), kEps),
                    Catch::StartsWith("layer_norm: bias shape (7, 1) does not match"));
  CHECK_THROWS_WITH(ops::layer_norm(zeros({4, 7}, DType::i32), zeros({7}, DType::i32), zeros({7}, DType::i32), kEps),
                    Catch::Equals("op layer_norm not implemented for device cpu / dtype i32"));
  CHECK_THROWS_WITH(ops::layer_norm(x, w.to(DType::f64), b, kEps), Catch::StartsWith("layer_norm: dtypes differ"));
  CHECK_THROWS_WITH(ops::layer_norm(x, w, b, -1.0), Catch::StartsWith("layer_norm: eps must be finite and >= 0"));
  CHECK_THROWS_WITH(ops::layer_norm(zeros({}), ones({1}), zeros({1}), kEps),
                    Catch::StartsWith("layer_norm: expected x with at least 1 dim"));
  CHECK_THROWS_WITH(ops::layer_norm(x, Tensor(), b, kEps),
                    Catch::StartsWith("layer_norm: an input tensor is undefined"));
  CHECK_THROWS_WITH(ops::layer_norm_backward(zeros({4, 6}), x, w, mean, rstd),
                    Catch::StartsWith("layer_norm_backward: grad shape (4, 6) does not match x shape (4, 7)"));
  CHECK_THROWS_WITH(ops::layer_norm_backward(x, x, w, zeros({4, 1}), rstd),
                    Catch::StartsWith("layer_norm_backward: mean shape (4, 1) does not match"));
  CHECK_THROWS_WITH(ops::layer_norm_backward(x, x, w, mean, rstd.to(DType::f64)),
                    Catch::StartsWith("layer_norm_backward: dtypes differ"));
}
