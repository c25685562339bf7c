// cross_entropy_sum and cross_entropy_backward against naive double loops written here:
// every logits layout, odd vocabularies, 2-d and 3-d logits, f32 and f64 logits, i32 and i64
// targets, ignore_index rows (default and a custom one); the backward also against central
// finite differences of the loss in f64; extreme logits; bad targets and other errors.
#include <cmath>
#include <functional>

#include "lib/core/rng.h"
#include "lib/ops/ops.h"
#include "tests/ops/op_test_utils.h"

using namespace hetu;
using namespace hetu::test;

namespace {

// Random targets in [0, V), about a quarter of them replaced by ignore_index.
Tensor random_targets(const Shape& shape, int64_t V, DType dtype, uint64_t seed, int64_t ignore_index) {
  CounterRng rng(seed, "targets");
  std::vector<int64_t> t(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < t.size(); ++i) {
    const int64_t index = static_cast<int64_t>(i);
    t[i] = rng.uniform(2 * index) < 0.25 ? ignore_index : static_cast<int64_t>(rng.uniform(2 * index + 1) * V);
  }
  return tensor_from(t, shape).to(dtype);
}

// loss = Σ_kept (log Σ_v exp(x_v) - x_target), straight from the definition.
double naive_loss(const std::vector<double>& x, const std::vector<double>& t, int64_t V, int64_t ignore_index,
                  int64_t* count) {
  double loss = 0;
  *count = 0;
  for (size_t n = 0; n < t.size(); ++n) {
    if (static_cast<int64_t>(t[n]) == ignore_index) continue;
    double denom = 0;
    for (int64_t v = 0; v < V; ++v) denom += std::exp(x[n * static_cast<size_t>(V) + static_cast<size_t>(v)]);
    loss += std::log(denom) - x[n * static_cast<size_t>(V) + static_cast<size_t>(t[n])];
    ++*count;
  }
  return loss;
}

// dlogits = scale · (exp(x_v) / Σ exp - [v == target]), zero for ignored rows.
std::vector<double> naive_backward(const std::vector<double>& x, const std::vector<double>& t, int64_t V,
                                   int64_t ignore_index, double scale) {
  std::vector<double> d(x.size(), 0.0);
  for (size_t n = 0; n < t.size(); ++n) {
    if (static_cast<int64_t>(t[n]) == ignore_index) continue;
    const size_t row = n * static_cast<size_t>(V);
    double denom = 0;
    for (int64_t v = 0; v < V; ++v) denom += std::exp(x[row + static_cast<size_t>(v)]);
    for (int64_t v = 0; v < V; ++v) {
      const double onehot = static_cast<int64_t>(t[n]) == v ? 1.0 : 0.0;
      d[row + static_cast<size_t>(v)] = scale * (std::exp(x[row + static_cast<size_t>(v)]) / denom - onehot);
    }
  }
  return d;
}

}  // namespace

TEST_CASE("cross_entropy_sum and its backward match the definition", "[cross_entropy]") {
  uint64_t seed = 13000;
  const std::vector<Shape> row_shapes = {{1}, {5}, {33}, {2, 3}};
  for (DType dtype : {DType::f32, DType::f64}) {
    for (DType index_dtype : {DType::i32, DType::i64}) {
      for (int64_t ignore_index : {int64_t{-100}, int64_t{0}}) {
        for (int64_t V : {1, 7, 33, 129}) {
          for (const Shape& rows : row_shapes) {
            for (Layout layout : {Layout::contiguous, Layout::transposed, Layout::strided}) {
              Shape shape = rows;
              shape.push_back(V);
              INFO(shape_str(shape) << " " << to_string(layout) << " " << to_string(dtype) << " "
                                    << to_string(index_dtype) << " ignore " << ignore_index);
              const Tensor logits = with_layout(random_tensor(shape, dtype, seed++, -4.0, 4.0), layout);
              const Tensor targets =
                  with_layout(random_targets(rows, V, index_dtype, seed++, ignore_index), Layout::strided);
              const std::vector<double> x = to_vector(logits), t = to_vector(targets);
              int64_t count = -1, ref_count = 0;
              const double ref = naive_loss(x, t, V, ignore_index, &ref_count);
              const Tensor loss = ops::cross_entropy_sum(logits, targets, ignore_index, &count);
              REQUIRE(loss.shape() == Shape{});
              CHECK(loss.dtype() == dtype);
              CHECK(count == ref_count);
              CHECK(std::fabs(loss.item() - ref) <= tolerance(dtype, 8 * static_cast<double>(t.size())));
              const double scale = 0.37;
              const Tensor d = ops::cross_entropy_backward(logits, targets, scale, ignore_index);
              REQUIRE(d.shape() == shape);
              CHECK(max_abs_diff(d, naive_backward(x, t, V, ignore_index, scale)) <= tolerance(dtype));
            }
          }
        }
      }
    }
  }
}

TEST_CASE("cross_entropy_backward matches finite differences in f64", "[cross_entropy]") {
  uint64_t seed = 14000;
  for (int64_t V : {2, 7, 33}) {
    INFO("V " << V);
    const Tensor logits = random_tensor({6, V}, DType::f64, seed++, -3.0, 3.0);
    const Tensor targets = random_targets({6}, V, DType::i64, seed++, -100);
    const double scale = 1.7;
    const auto loss = [&] { return scale * ops::cross_entropy_sum(logits, targets).item(); };
    std::vector<double> numeric(static_cast<size_t>(logits.numel()));
    double* p = logits.data<double>();
    const double h = 1e-6;
    for (size_t i = 0; i < numeric.size(); ++i) {
      const double saved = p[i];
      p[i] = saved + h;
      const double up = loss();
      p[i] = saved - h;
      const double down = loss();
      p[i] = saved;
      numeric[i] = (up - down) / (2 * h);
    }
    CHECK(max_abs_diff(ops::cross_entropy_backward(logits, targets, scale), numeric) <= 1e-7);
  }
}

TEST_CASE("cross_entropy stays finite on extreme logits", "[cross_entropy]") {
  for (DType dtype : {DType::f32, DType::f64}) {
    INFO(to_string(dtype));
    const Tensor logits = tensor_from(std::vector<double>{1000, 0, -1000, 1e30, 1e30, -1e30}, {2, 3}).to(dtype);
    const Tensor targets = tensor_from(std::vector<int64_t>{2, 1}, {2});
    int64_t count = 0;
    const double loss = ops::cross_entropy_sum(logits, targets, -100, &count).item();
    CHECK(count == 2);
    CHECK(std::fabs(loss - (2000 + std::log(2.0))) <= tolerance(dtype, 2000));
    CHECK(max_abs_diff(ops::cross_entropy_backward(logits, targets, 1.0), {1, 0, -1, 0.5, -0.5, 0}) <=
          tolerance(dtype));
  }
}

TEST_CASE("cross_entropy with every row ignored or no rows", "[cross_entropy]") {
  const Tensor logits = random_tensor({3, 5}, DType::f32, 1);
  const Tensor targets = tensor_from(std::vector<int32_t>{-1, -1, -1}, {3});
  int64_t count = -1;
  CHECK(ops::cross_entropy_sum(logits, targets, -1, &count).item() == 0);
  CHECK(count == 0);
  CHECK(max_abs_diff(ops::cross_entropy_backward(logits, targets, 1.0, -1), std::vector<double>(15, 0.0)) == 0);
  CHECK(ops::cross_entropy_sum(zeros({0, 5}), zeros({0}, DType::i64), -100, &count).item() == 0);
  CHECK(count == 0);
  CHECK(ops::cross_entropy_sum(logits, targets, -1).item() == 0);  // count is optional
}

TEST_CASE("cross_entropy argument errors", "[cross_entropy]") {
  const Tensor logits = random_tensor({4, 5}, DType::f32, 1);
  const Tensor bad = tensor_from(std::vector<int64_t>{0, 4, 9, 1}, {4});
  CHECK_THROWS_WITH(ops::cross_entropy_sum(logits, bad),
                    Catch::Equals("cross_entropy_sum: target 9 at row 2 is outside [0, 5) and is not ignore_index "
                                  "(-100)"));
  CHECK_THROWS_WITH(ops::cross_entropy_backward(logits, tensor_from(std::vector<int32_t>{0, -1, 0, 0}, {4}), 1.0),
                    Catch::StartsWith("cross_entropy_backward: target -1 at row 1 is outside [0, 5)"));
  CHECK_THROWS_WITH(ops::cross_entropy_sum(logits, zeros({4})),
                    Catch::Equals("op cross_entropy_sum not implemented for device cpu / dtype f32"));
  CHECK_THROWS_WITH(ops::cross_entropy_sum(zeros({4, 5}, DType::i32), zeros({4}, DType::i64)),
                    Catch::Equals("op cross_entropy_sum not implemented for device cpu / dtype i32"));
  CHECK_THROWS_WITH(ops::cross_entropy_sum(logits, zeros({5}, DType::i64)),
                    Catch::StartsWith("cross_entropy_sum: targets shape (5,) does not match logits (4, 5)"));
  CHECK_THROWS_WITH(ops::cross_entropy_backward(logits, zeros({4, 1}, DType::i64), 1.0),
                    Catch::StartsWith("cross_entropy_backward: targets shape (4, 1) does not match"));
  CHECK_THROWS_WITH(ops::cross_entropy_sum(zeros({}), zeros({}, DType::i64)),
                    Catch::StartsWith("cross_entropy_sum: expected logits with at least 1 dim"));
}
