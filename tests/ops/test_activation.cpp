// GELU (tanh approximation) and SiLU against naive double loops: forward, backward against
// the analytic derivative, backward against central finite differences of the forward op
// (f64), every layout, odd sizes, f32 and f64, saturated tails, argument errors.
#include <cmath>
#include <functional>

#include "lib/ops/ops.h"
#include "tests/ops/gelu_reference.h"
#include "tests/ops/op_test_utils.h"

using namespace hetu;
using namespace hetu::test;

namespace {

double sigmoid_ref(double x) { return 1 / (1 + std::exp(-x)); }
double silu_ref(double x) { return x * sigmoid_ref(x); }
double silu_grad_ref(double x) { return sigmoid_ref(x) * (1 + x * (1 - sigmoid_ref(x))); }

struct Activation {
  const char* name;
  std::function<Tensor(const Tensor&)> forward;
  std::function<Tensor(const Tensor&, const Tensor&)> backward;
  double (*value)(double);
  double (*derivative)(double);
};

const std::vector<Activation>& activations() {
  static const std::vector<Activation> list = {
      {"gelu", ops::gelu, ops::gelu_backward, gelu_ref, gelu_grad_ref},
      {"silu", ops::silu, ops::silu_backward, silu_ref, silu_grad_ref},
  };
  return list;
}

// Odd sizes, 1-d to 3-d, and one large enough for the OpenMP path.
// x + h elementwise, built here so the check does not lean on another op family.
Tensor shifted(const Tensor& x, double h) {
  std::vector<double> values = to_vector(x);
  for (double& v : values) v += h;
  return tensor_from(values, x.shape());
}

const std::vector<Shape> kShapes = {{1}, {7}, {33, 7}, {3, 129}, {2, 7, 33}, {1, 129}, {129, 257}};

}  // namespace

TEST_CASE("gelu and silu forward match a double loop", "[activation]") {
  uint64_t seed = 1;
  for (const Activation& act : activations()) {
    for (DType dtype : {DType::f32, DType::f64}) {
      for (const Shape& shape : kShapes) {
        for (Layout layout : {Layout::contiguous, Layout::transposed, Layout::strided}) {
          const Tensor x = with_layout(random_tensor(shape, dtype, seed++, -5.0, 5.0), layout);
          std::vector<double> expected = to_vector(x);
          for (double& e : expected) e = act.value(e);
          INFO(act.name << " " << shape_str(shape) << " " << to_string(layout) << " " << to_string(dtype));
          const Tensor y = act.forward(x);
          REQUIRE(y.shape() == shape);
          REQUIRE(y.dtype() == dtype);
          REQUIRE(y.is_contiguous());
          CHECK(max_abs_diff(y, expected) <= tolerance(dtype, 5));
        }
      }
    }
  }
}

TEST_CASE("gelu and silu backward match the analytic derivative", "[activation]") {
  uint64_t seed = 1000;
  for (const Activation& act : activations()) {
    for (DType dtype : {DType::f32, DType::f64}) {
      for (const Shape& shape : kShapes) {
        for (Layout layout : {Layout::contiguous, Layout::transposed, Layout::strided}) {
          // grad and x in different layouts, so the two inputs are made contiguous separately.
          const Layout grad_layout = layout == Layout::contiguous ? Layout::strided : Layout::contiguous;
          const Tensor x = with_layout(random_tensor(shape, dtype, seed++, -5.0, 5.0), layout);
          const Tensor grad = with_layout(random_tensor(shape, dtype, seed++, -2.0, 2.0), grad_layout);
          const std::vector<double> vx = to_vector(x), vg = to_vector(grad);
          std::vector<double> expected(vx.size());
          for (size_t i = 0; i < vx.size(); ++i) expected[i] = vg[i] * act.derivative(vx[i]);
          INFO(act.name << " " << shape_str(shape) << " " << to_string(layout) << " " << to_string(dtype));
          const Tensor dx = act.backward(grad, x);
          REQUIRE(dx.shape() == shape);
          CHECK(max_abs_diff(dx, expected) <= tolerance(dtype, 4));
        }
      }
    }
  }
}

TEST_CASE("gelu and silu backward match central finite differences of the forward op (f64)", "[activation]") {
  const double h = 1e-6;
  uint64_t seed = 2000;
  for (const Activation& act : activations()) {
    for (const Shape& shape : {Shape{7}, Shape{33, 7}, Shape{3, 129}}) {
      const Tensor x = random_tensor(shape, DType::f64, seed++, -6.0, 6.0);
      const Tensor grad = random_tensor(shape, DType::f64, seed++);
      // The op is elementwise, so one shifted input gives every partial derivative at once.
      const std::vector<double> up = to_vector(act.forward(shifted(x, h)));
      const std::vector<double> down = to_vector(act.forward(shifted(x, -h)));
      const std::vector<double> vg = to_vector(grad);
      std::vector<double> expected(vg.size());
      for (size_t i = 0; i < vg.size(); ++i) expected[i] = vg[i] * (up[i] - down[i]) / (2 * h);
      INFO(act.name << " " << shape_str(shape));
      CHECK(max_abs_diff(act.backward(grad, x), expected) <= 1e-8);
    }
  }
}

TEST_CASE("gelu and silu saturate without NaN far from zero", "[activation]") {
  for (DType dtype : {DType::f32, DType::f64}) {
    const Tensor x = tensor_from<double>({-1000, -100, -20, 0, 20, 100, 1000}, {7}).to(dtype);
    const Tensor grad = ones({7}, dtype);
    INFO(to_string(dtype));
    // gelu: 0 on the left, x on the right; gelu'(0) = 0.5.
    CHECK(max_abs_diff(ops::gelu(x), {0, 0, 0, 0, 20, 100, 1000}) <= 1e-12);
    CHECK(max_abs_diff(ops::gelu_backward(grad, x), {0, 0, 0, 0.5, 1, 1, 1}) <= 1e-12);
    // silu: x·σ(x) underflows to 0 on the left (e^1000 = inf must not give NaN).
    const std::vector<double> silu_expected = {0, silu_ref(-100), silu_ref(-20), 0, silu_ref(20), 100, 1000};
    CHECK(max_abs_diff(ops::silu(x), silu_expected) <= tolerance(dtype, 20));
    const std::vector<double> silu_grad_expected = {0, silu_grad_ref(-100), silu_grad_ref(-20), 0.5,
                                                    silu_grad_ref(20), 1, 1};
    CHECK(max_abs_diff(ops::silu_backward(grad, x), silu_grad_expected) <= tolerance(dtype));
  }
}

TEST_CASE("activation argument errors name the op", "[activation]") {
  const Tensor x = random_tensor({3, 4}, DType::f32, 7);
  const Tensor ints = tensor_from<int32_t>({1, 2, 3}, {3});
  CHECK_THROWS_WITH(ops::gelu(ints), Catch::Contains("op gelu not implemented") && Catch::Contains("i32"));
  CHECK_THROWS_WITH(ops::silu(ints), Catch::Contains("op silu not implemented"));
  CHECK_THROWS_WITH(ops::gelu(Tensor()), Catch::StartsWith("gelu: an input tensor is undefined"));
  CHECK_THROWS_WITH(ops::gelu_backward(random_tensor({4, 3}, DType::f32, 8), x),
                    Catch::StartsWith("gelu_backward: grad shape (4, 3) differs from x shape (3, 4)"));
  CHECK_THROWS_WITH(ops::silu_backward(x.to(DType::f64), x), Catch::StartsWith("silu_backward: dtypes differ"));
  CHECK_THROWS_WITH(ops::gelu(x.to(DType::bf16)),
                    Catch::Contains("op gelu not implemented") && Catch::Contains("bf16"));
}
