// Elementwise ops against naive loops: broadcasting in every position, scalar forms,
// unary math, non-contiguous inputs, odd sizes, f32 and f64.
#include <cmath>
#include <functional>

#include "lib/ops/ops.h"
#include "tests/ops/op_test_utils.h"

using namespace hetu;
using namespace hetu::test;

TEST_CASE("binary ops broadcast like NumPy", "[elementwise]") {
  using BinaryFn = std::function<Tensor(const Tensor&, const Tensor&)>;
  const std::vector<std::tuple<const char*, BinaryFn, std::function<double(double, double)>>> ops_list = {
      {"add", ops::add, [](double a, double b) { return a + b; }},
      {"sub", ops::sub, [](double a, double b) { return a - b; }},
      {"mul", ops::mul, [](double a, double b) { return a * b; }},
      {"div", ops::div, [](double a, double b) { return a / b; }},
  };
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{7}, {7}}, {{33, 7}, {7}}, {{4, 1, 3}, {5, 1}}, {{1}, {2, 129}}, {{2, 3, 4}, {2, 3, 4}}, {{3, 1}, {1, 33}}};
  uint64_t seed = 100;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (const auto& [name, fn, ref] : ops_list) {
      for (const auto& [sa, sb] : shapes) {
        for (Layout layout : {Layout::contiguous, Layout::transposed, Layout::strided}) {
          const Tensor a = with_layout(random_tensor(sa, dtype, seed++), layout);
          const Tensor b = with_layout(random_tensor(sb, dtype, seed++, 0.5, 2.0), layout);
          const Shape out_shape = broadcast_shapes(sa, sb);
          const std::vector<double> va = to_vector(a.expand(out_shape)), vb = to_vector(b.expand(out_shape));
          std::vector<double> expected(va.size());
          for (size_t i = 0; i < va.size(); ++i) expected[i] = ref(va[i], vb[i]);
          INFO(name << " " << shape_str(sa) << " " << shape_str(sb) << " " << to_string(layout) << " " << to_string(dtype));
          const Tensor out = fn(a, b);
          REQUIRE(out.shape() == out_shape);
          CHECK(max_abs_diff(out, expected) <= tolerance(dtype, 4));
        }
      }
    }
  }
}

TEST_CASE("add_ adds in place, broadcasting the source", "[elementwise]") {
  uint64_t seed = 700;
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{7}, {7}}, {{33, 7}, {7}}, {{4, 5, 3}, {5, 1}}, {{2, 129}, {1}}};
  for (DType dtype : {DType::f32, DType::f64}) {
    for (const auto& [sd, ss] : shapes) {
      for (Layout layout : {Layout::contiguous, Layout::transposed, Layout::strided}) {
        const Tensor dst = with_layout(random_tensor(sd, dtype, seed++), layout);
        const Tensor src = with_layout(random_tensor(ss, dtype, seed++), layout);
        const std::vector<double> expected = to_vector(ops::add(dst, src));
        const Tensor alias = dst;  // another handle: sees the update
        const void* storage = dst.storage().get();
        ops::add_(dst, src);
        INFO(shape_str(sd) << " += " << shape_str(ss) << " " << to_string(layout) << " " << to_string(dtype));
        CHECK(dst.storage().get() == storage);
        CHECK(max_abs_diff(alias, expected) == 0.0);
      }
    }
  }
  CHECK_THROWS_WITH(ops::add_(zeros({3}), ones({2, 3})), "add_: (2, 3) does not broadcast to (3,)");
}

TEST_CASE("unary and scalar ops match std:: math", "[elementwise]") {
  using UnaryFn = std::function<Tensor(const Tensor&)>;
  const std::vector<std::tuple<const char*, UnaryFn, std::function<double(double)>>> ops_list = {
      {"neg", ops::neg, [](double x) { return -x; }},
      {"exp", ops::exp, [](double x) { return std::exp(x); }},
      {"log", ops::log, [](double x) { return std::log(x); }},
      {"sqrt", ops::sqrt, [](double x) { return std::sqrt(x); }},
      {"rsqrt", ops::rsqrt, [](double x) { return 1.0 / std::sqrt(x); }},
      {"tanh", ops::tanh, [](double x) { return std::tanh(x); }},
      {"relu", ops::relu, [](double x) { return x > 0 ? x : 0.0; }},
      {"add_scalar", [](const Tensor& x) { return ops::add_scalar(x, 2.5); }, [](double x) { return x + 2.5; }},
      {"mul_scalar", [](const Tensor& x) { return ops::mul_scalar(x, -3.0); }, [](double x) { return -3.0 * x; }},
  };
  uint64_t seed = 500;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (const auto& [name, fn, ref] : ops_list) {
      for (const Shape& shape : {Shape{1}, Shape{7}, Shape{33, 7}, Shape{3, 129}}) {
        for (Layout layout : {Layout::contiguous, Layout::transposed, Layout::strided}) {
          const bool positive = std::string(name) == "log" || std::string(name).find("sqrt") != std::string::npos;
          const Tensor x = with_layout(random_tensor(shape, dtype, seed++, positive ? 0.1 : -2.0, 2.0), layout);
          std::vector<double> expected = to_vector(x);
          for (double& v : expected) v = ref(v);
          INFO(name << " " << shape_str(shape) << " " << to_string(layout) << " " << to_string(dtype));
          CHECK(max_abs_diff(fn(x), expected) <= tolerance(dtype, 8));
        }
      }
    }
  }
}

TEST_CASE("elementwise ops reject unsupported dtypes", "[elementwise]") {
  CHECK_THROWS_WITH(ops::add(zeros({2}, DType::i64), zeros({2}, DType::i64)),
                    Catch::Contains("op add not implemented for device cpu / dtype i64"));
  CHECK_THROWS_WITH(ops::exp(zeros({2}, DType::bf16)), Catch::Contains("op exp not implemented for device cpu / dtype bf16"));
  CHECK_THROWS_WITH(ops::add(zeros({2, 3}), zeros({4})), Catch::Contains("do not broadcast"));
}
