// Reductions against naive loops: sum/mean over every subset of dims, keepdim, max with
// argmax, sum_to_shape, non-contiguous inputs.
#include "lib/ops/ops.h"
#include "tests/ops/op_test_utils.h"

using namespace hetu;
using namespace hetu::test;

namespace {

// Naive: reduce a (2, 3, 4)-like tensor over the dims in `mask` (bit d = reduce dim d).
std::vector<double> naive_sum(const Tensor& x, unsigned mask, bool average) {
  const Shape& s = x.shape();
  const std::vector<double> v = to_vector(x);
  Shape out_shape;
  int64_t count = 1;
  for (size_t d = 0; d < s.size(); ++d) {
    if (mask >> d & 1u) count *= s[d]; else out_shape.push_back(s[d]);
  }
  std::vector<double> out(static_cast<size_t>(shape_numel(out_shape)), 0.0);
  const Shape strides = contiguous_strides(s);
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t o = 0;
    for (size_t d = 0; d < s.size(); ++d) {
      if (!(mask >> d & 1u)) o = o * s[d] + (i / strides[d]) % s[d];
    }
    out[static_cast<size_t>(o)] += v[static_cast<size_t>(i)];
  }
  if (average) for (double& o : out) o /= static_cast<double>(count);
  return out;
}

}  // namespace

TEST_CASE("sum and mean over every subset of dims", "[reduce]") {
  uint64_t seed = 900;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (const Shape& shape : {Shape{7, 33, 3}, Shape{1, 129, 2}, Shape{4, 5, 6}}) {
      for (Layout layout : {Layout::contiguous, Layout::transposed, Layout::strided}) {
        const Tensor x = with_layout(random_tensor(shape, dtype, seed++), layout);
        for (unsigned mask = 1; mask < 8; ++mask) {
          std::vector<int64_t> dims;
          for (int64_t d = 0; d < 3; ++d) {
            if (mask >> d & 1u) dims.push_back(d == 2 ? -1 : d);  // also exercise a negative dim
          }
          INFO(shape_str(shape) << " mask " << mask << " " << to_string(layout) << " " << to_string(dtype));
          CHECK(max_abs_diff(ops::sum(x, dims), naive_sum(x, mask, false)) <= tolerance(dtype, 100));
          CHECK(max_abs_diff(ops::mean(x, dims), naive_sum(x, mask, true)) <= tolerance(dtype, 4));
          const Tensor kept = ops::sum(x, dims, /*keepdim=*/true);
          CHECK(kept.dim() == 3);
        }
      }
    }
  }
  CHECK(ops::sum(ones({3, 4})).shape() == Shape{});
  CHECK(ops::sum(ones({3, 4})).item() == 12.0);
}

TEST_CASE("max returns values and the first argmax", "[reduce]") {
  const Tensor x = tensor_from<double>({1, 5, 5, -2, 0, -7, 3, 3}, {2, 4});
  Tensor index;
  const Tensor m = ops::max(x, 1, false, &index);
  CHECK(to_vector(m) == std::vector<double>{5, 3});
  CHECK(to_vector(index) == std::vector<double>{1, 2});
  const Tensor col = ops::max(x, 0, true, &index);
  CHECK(col.shape() == Shape{1, 4});
  CHECK(to_vector(col) == std::vector<double>{1, 5, 5, 3});
  CHECK(to_vector(index) == std::vector<double>{0, 0, 0, 1});
  CHECK_THROWS_WITH(ops::max(zeros({2, 0}), 1), Catch::Contains("max: dim 1"));
}

TEST_CASE("sum_to_shape undoes broadcasting", "[reduce]") {
  const Tensor g = random_tensor({4, 5, 3}, DType::f64, 77);
  const std::vector<double> v = to_vector(g);
  // (4, 5, 3) -> (5, 1): sum over dims 0 and 2.
  std::vector<double> expected(5, 0.0);
  for (int64_t i = 0; i < 60; ++i) expected[static_cast<size_t>((i / 3) % 5)] += v[static_cast<size_t>(i)];
  const Tensor r = ops::sum_to_shape(g, {5, 1});
  REQUIRE(r.shape() == Shape{5, 1});
  CHECK(max_abs_diff(r, expected) <= 1e-12);
  CHECK(ops::sum_to_shape(g, {4, 5, 3}).same(g));
  CHECK_THROWS_WITH(ops::sum_to_shape(g, {2, 3}), Catch::Contains("do not broadcast"));
}

// A sum over the leading dims of a contiguous tensor adds whole rows into column sums
// (no transposing copy); any other layout takes the row path. Both add each output in the
// same order, so they agree bit for bit. Widths past one column block (512) and sizes over
// the threading threshold included.
TEST_CASE("sum over leading dims: the column path equals the row path exactly", "[reduce]") {
  uint64_t seed = 4000;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (const Shape& shape : {Shape{37, 1100}, Shape{3, 5, 1300}, Shape{64, 4, 768}, Shape{2, 1, 1}}) {
      const Tensor x = random_tensor(shape, dtype, seed++);
      const Tensor strided = with_layout(x, Layout::strided);  // same values, not contiguous
      REQUIRE(x.is_contiguous());
      for (int64_t lead = 1; lead < x.dim(); ++lead) {
        std::vector<int64_t> dims;
        unsigned mask = 0;
        for (int64_t d = 0; d < lead; ++d) {
          dims.push_back(d);
          mask |= 1u << d;
        }
        INFO(shape_str(shape) << " over " << lead << " leading dims, " << to_string(dtype));
        const Tensor fast = ops::sum(x, dims), rows = ops::sum(strided, dims);
        CHECK(to_vector(fast) == to_vector(rows));
        CHECK(max_abs_diff(fast, naive_sum(x, mask, false)) <= tolerance(dtype, 100));
        CHECK(to_vector(ops::mean(x, dims, /*keepdim=*/true)) == to_vector(ops::mean(strided, dims, true)));
      }
    }
  }
  // A bias gradient: sum_to_shape from (B, T, C) to (C).
  const Tensor g = random_tensor({4, 64, 768}, DType::f32, 4100);
  CHECK(to_vector(ops::sum_to_shape(g, {768})) == to_vector(ops::sum_to_shape(with_layout(g, Layout::strided), {768})));
}
