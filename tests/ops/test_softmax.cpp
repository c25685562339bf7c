// softmax, log_softmax and their backwards against naive double loops written here: every
// layout, odd row lengths, 1-d to 3-d inputs, f32 and f64; the backwards also against the
// full Jacobian and against central finite differences of the forward in f64; extreme rows
// and argument errors.
#include <cmath>
#include <functional>
#include <limits>

#include "lib/ops/ops.h"
#include "tests/ops/op_test_utils.h"

using namespace hetu;
using namespace hetu::test;

namespace {

// (..., C) shapes with odd C and 0 to 2 leading dims.
// Naive softmax (or log_softmax) over rows of C, straight from the definition in double.
std::vector<double> naive_softmax(const std::vector<double>& x, int64_t C, bool log) {
  std::vector<double> out(x.size());
  for (size_t row = 0; row < x.size(); row += static_cast<size_t>(C)) {
    double denom = 0;
    for (int64_t j = 0; j < C; ++j) denom += std::exp(x[row + static_cast<size_t>(j)]);
    for (int64_t j = 0; j < C; ++j) {
      const double xj = x[row + static_cast<size_t>(j)];
      out[row + static_cast<size_t>(j)] = log ? xj - std::log(denom) : std::exp(xj) / denom;
    }
  }
  return out;
}

// dx_i = Σ_j g_j ∂y_j/∂x_i with the Jacobian written out: softmax ∂y_j/∂x_i = y_j(δ_ij - y_i);
// log_softmax ∂y_j/∂x_i = δ_ij - p_i with p = exp(y).
std::vector<double> naive_backward(const std::vector<double>& g, const std::vector<double>& y, int64_t C, bool log) {
  std::vector<double> dx(y.size(), 0.0);
  for (size_t row = 0; row < y.size(); row += static_cast<size_t>(C)) {
    for (int64_t i = 0; i < C; ++i) {
      const size_t ri = row + static_cast<size_t>(i);
      for (int64_t j = 0; j < C; ++j) {
        const size_t rj = row + static_cast<size_t>(j);
        const double delta = i == j ? 1.0 : 0.0;
        dx[ri] += g[rj] * (log ? delta - std::exp(y[ri]) : y[rj] * (delta - y[ri]));
      }
    }
  }
  return dx;
}

}  // namespace

TEST_CASE("softmax and log_softmax match the definition", "[softmax]") {
  uint64_t seed = 3000;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (const Shape& shape : row_shapes()) {
      for (Layout layout : {Layout::contiguous, Layout::transposed, Layout::strided}) {
        const Tensor x = with_layout(random_tensor(shape, dtype, seed++, -4.0, 4.0), layout);
        const std::vector<double> vx = to_vector(x);
        INFO(shape_str(shape) << " " << to_string(layout) << " " << to_string(dtype));
        const Tensor y = ops::softmax(x), ly = ops::log_softmax(x);
        REQUIRE(y.shape() == shape);
        REQUIRE(ly.shape() == shape);
        CHECK(y.dtype() == dtype);
        CHECK(max_abs_diff(y, naive_softmax(vx, shape.back(), false)) <= tolerance(dtype));
        CHECK(max_abs_diff(ly, naive_softmax(vx, shape.back(), true)) <= tolerance(dtype, 4));
      }
    }
  }
}

TEST_CASE("softmax_backward and log_softmax_backward match the Jacobian", "[softmax]") {
  uint64_t seed = 4000;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (const Shape& shape : row_shapes()) {
      for (Layout layout : {Layout::contiguous, Layout::transposed, Layout::strided}) {
        for (bool log : {false, true}) {
          INFO(shape_str(shape) << " " << to_string(layout) << " " << to_string(dtype) << (log ? " log" : ""));
          // y is the naive forward of random x, stored in dtype; g is random.
          const std::vector<double> vx = to_vector(random_tensor(shape, DType::f64, seed++, -3.0, 3.0));
          const Tensor y = with_layout(tensor_from(naive_softmax(vx, shape.back(), log), shape).to(dtype), layout);
          const Tensor g = with_layout(random_tensor(shape, dtype, seed++), layout);
          const Tensor dx = log ? ops::log_softmax_backward(g, y) : ops::softmax_backward(g, y);
          REQUIRE(dx.shape() == shape);
          const std::vector<double> expected = naive_backward(to_vector(g), to_vector(y), shape.back(), log);
          CHECK(max_abs_diff(dx, expected) <= tolerance(dtype, 8));
        }
      }
    }
  }
}

TEST_CASE("softmax backwards match finite differences in f64", "[softmax]") {
  uint64_t seed = 5000;
  for (const Shape& shape : {Shape{2, 3, 7}, Shape{4, 33}, Shape{5}}) {
    for (bool log : {false, true}) {
      INFO(shape_str(shape) << (log ? " log_softmax" : " softmax"));
      const Tensor x = random_tensor(shape, DType::f64, seed++, -3.0, 3.0);
      const std::vector<double> g = to_vector(random_tensor(shape, DType::f64, seed++));
      const auto forward = [&] { return log ? ops::log_softmax(x) : ops::softmax(x); };
      const std::vector<double> numeric = numeric_grad(x, [&] { return dot(forward(), g); });
      const Tensor gt = tensor_from(g, shape), y = forward();
      const Tensor dx = log ? ops::log_softmax_backward(gt, y) : ops::softmax_backward(gt, y);
      CHECK(max_abs_diff(dx, numeric) <= 1e-7);
    }
  }
}

TEST_CASE("softmax stays finite on extreme rows", "[softmax]") {
  const double inf = std::numeric_limits<double>::infinity();
  for (DType dtype : {DType::f32, DType::f64}) {
    INFO(to_string(dtype));
    const Tensor x = tensor_from(std::vector<double>{1000, 0, -1000, 1e30, 1e30, -1e30, -inf, 0, 5}, {3, 3}).to(dtype);
    const std::vector<double> e5 = {0, 1 / (1 + std::exp(5.0)), 1 / (1 + std::exp(-5.0))};
    const Tensor y = ops::softmax(x);
    CHECK(max_abs_diff(y, {1, 0, 0, 0.5, 0.5, 0, e5[0], e5[1], e5[2]}) <= tolerance(dtype));
    const Tensor ly = ops::log_softmax(x);
    const double l5 = -std::log1p(std::exp(-5.0));
    CHECK(max_abs_diff(ly.narrow(0, 0, 1), {0, -1000, -2000}) <= tolerance(dtype, 4));
    // [1e30, 1e30, -1e30]: the log 2 must survive next to 1e30 (x - m first, then - log sum).
    CHECK(max_abs_diff(ly.narrow(0, 1, 1).narrow(1, 0, 2), {-std::log(2.0), -std::log(2.0)}) <= tolerance(dtype));
    CHECK(std::fabs(to_vector(ly)[5] / -2e30 - 1) <= tolerance(dtype));
    CHECK(to_vector(ly)[6] == -inf);
    CHECK(max_abs_diff(ly.narrow(0, 2, 1).narrow(1, 1, 2), {l5 - 5, l5}) <= tolerance(dtype));
    for (double v : to_vector(ly.narrow(0, 0, 2))) CHECK(std::isfinite(v));
    // The backwards stay finite where y underflows to 0 (or log y is -2000).
    const Tensor g = tensor_from(std::vector<double>{1, 2, 3}, {1, 3}).to(dtype);
    const Tensor dx = ops::softmax_backward(g, y.narrow(0, 0, 1));
    CHECK(max_abs_diff(dx, {0, 0, 0}) <= tolerance(dtype));
    const Tensor ldx = ops::log_softmax_backward(g, ly.narrow(0, 0, 1));
    CHECK(max_abs_diff(ldx, {1 - 6, 2, 3}) <= tolerance(dtype, 8));
  }
}

TEST_CASE("softmax on empty tensors", "[softmax]") {
  CHECK(ops::softmax(zeros({0, 7})).shape() == Shape{0, 7});
  CHECK(ops::log_softmax(zeros({3, 0}, DType::f64)).shape() == Shape{3, 0});
  CHECK(ops::softmax_backward(zeros({2, 0, 5}), zeros({2, 0, 5})).shape() == Shape{2, 0, 5});
}

TEST_CASE("softmax argument errors", "[softmax]") {
  const Tensor x = random_tensor({4, 3}, DType::f32, 1);
  CHECK_THROWS_WITH(ops::softmax(zeros({4, 3}, DType::i32)),
                    Catch::Equals("op softmax not implemented for device cpu / dtype i32"));
  CHECK_THROWS_WITH(ops::log_softmax(zeros({4, 3}, DType::i64)),
                    Catch::StartsWith("op log_softmax not implemented for device cpu / dtype i64"));
  CHECK_THROWS_WITH(ops::softmax(Tensor()), Catch::StartsWith("softmax: an input tensor is undefined"));
  CHECK_THROWS_WITH(ops::softmax(zeros({})), Catch::StartsWith("softmax: expected a tensor with at least 1 dim"));
  CHECK_THROWS_WITH(ops::softmax_backward(random_tensor({4, 4}, DType::f32, 2), x),
                    Catch::StartsWith("softmax_backward: grad shape (4, 4) does not match"));
  CHECK_THROWS_WITH(ops::log_softmax_backward(x.to(DType::f64), x),
                    Catch::StartsWith("log_softmax_backward: dtypes differ"));
}
