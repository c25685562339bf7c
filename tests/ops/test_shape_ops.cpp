// concat, split and chunk against naive loops: concat of non-contiguous inputs along every
// dim (and negative dims), split/chunk pieces that are views of x's storage, torch.chunk's
// piece sizes, and the argument errors.
#include "lib/ops/ops.h"
#include "tests/ops/op_test_utils.h"

using namespace hetu;
using namespace hetu::test;

namespace {

constexpr Layout kLayouts[] = {Layout::contiguous, Layout::transposed, Layout::strided};

// (outer, inner) around dim of a shape.
std::pair<int64_t, int64_t> outer_inner(const Shape& shape, int64_t dim) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < dim) outer *= shape[static_cast<size_t>(d)];
    if (d > dim) inner *= shape[static_cast<size_t>(d)];
  }
  return {outer, inner};
}

// Values of x[..., start:start+length, ...] along dim, row-major, by index arithmetic.
std::vector<double> narrow_ref(const std::vector<double>& x, const Shape& shape, int64_t dim, int64_t start,
                               int64_t length) {
  const auto [outer, inner] = outer_inner(shape, dim);
  const int64_t n = shape[static_cast<size_t>(dim)];
  std::vector<double> out;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = start; j < start + length; ++j) {
      for (int64_t i = 0; i < inner; ++i) out.push_back(x[static_cast<size_t>((o * n + j) * inner + i)]);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("concat copies non-contiguous inputs along every dim", "[shape_ops]") {
  uint64_t seed = 1;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (const Shape& base : {Shape{7}, Shape{33, 7}, Shape{3, 1, 129}, Shape{2, 7, 3}}) {
      const int64_t ndim = static_cast<int64_t>(base.size());
      for (int64_t dim = -ndim; dim < ndim; ++dim) {
        const int64_t d = dim < 0 ? dim + ndim : dim;
        // Three inputs of sizes 1, 7, 33 along dim, each in its own layout.
        std::vector<Tensor> inputs;
        std::vector<std::vector<double>> values;
        int64_t total = 0;
        for (int64_t size : {1, 7, 33}) {
          Shape shape = base;
          shape[static_cast<size_t>(d)] = size;
          const Layout layout = kLayouts[(inputs.size() + static_cast<size_t>(d)) % 3];  // a mix per call
          inputs.push_back(with_layout(random_tensor(shape, dtype, seed++), layout));
          values.push_back(to_vector(inputs.back()));
          total += size;
        }
        Shape out_shape = base;
        out_shape[static_cast<size_t>(d)] = total;
        const auto [outer, inner] = outer_inner(out_shape, d);
        std::vector<double> expected;
        for (int64_t o = 0; o < outer; ++o) {
          for (size_t t = 0; t < inputs.size(); ++t) {
            const int64_t n = inputs[t].size(d);
            const double* row = values[t].data() + o * n * inner;
            expected.insert(expected.end(), row, row + n * inner);
          }
        }
        INFO(shape_str(base) << " dim " << dim << " " << to_string(dtype));
        const Tensor out = ops::concat(inputs, dim);
        REQUIRE(out.shape() == out_shape);
        REQUIRE(out.is_contiguous());
        CHECK(max_abs_diff(out, expected) == 0);
      }
    }
  }
}

TEST_CASE("concat of every layout pair, one input, and integer dtypes", "[shape_ops]") {
  uint64_t seed = 50;
  for (Layout la : kLayouts) {
    for (Layout lb : kLayouts) {
      const Tensor a = with_layout(random_tensor({7, 33}, DType::f64, seed++), la);
      const Tensor b = with_layout(random_tensor({7, 1}, DType::f64, seed++), lb);
      INFO(to_string(la) << " + " << to_string(lb));
      const std::vector<double> va = to_vector(a), vb = to_vector(b);
      std::vector<double> expected;
      for (size_t r = 0; r < 7; ++r) {
        expected.insert(expected.end(), va.data() + r * 33, va.data() + r * 33 + 33);
        expected.push_back(vb[r]);
      }
      CHECK(max_abs_diff(ops::concat({a, b}, 1), expected) == 0);
    }
  }
  const Tensor x = with_layout(random_tensor({3, 7}, DType::f32, 60), Layout::transposed);
  const Tensor single = ops::concat({x}, 0);
  CHECK(!single.same(x));
  CHECK(max_abs_diff(single, to_vector(x)) == 0);
  const Tensor ints = tensor_from<int64_t>({1, 2, 3}, {3});
  CHECK(max_abs_diff(ops::concat({ints, ints.slice(0, 0, 3, 2)}, 0), {1, 2, 3, 1, 3}) == 0);
}

TEST_CASE("concat argument errors", "[shape_ops]") {
  const Tensor a = random_tensor({2, 3}, DType::f32, 1);
  CHECK_THROWS_WITH(ops::concat({}, 0), Catch::StartsWith("concat: no tensors given"));
  CHECK_THROWS_WITH(ops::concat({a, a.to(DType::f64)}, 0),
                    Catch::StartsWith("concat: tensor 1 has dtype f64, tensor 0 has f32"));
  CHECK_THROWS_WITH(ops::concat({a, random_tensor({3, 3}, DType::f32, 2)}, 1),
                    Catch::StartsWith("concat: tensor 1 has shape (3, 3), tensor 0 has (2, 3); "
                                      "they may differ only in dim 1"));
  CHECK_THROWS_WITH(ops::concat({a, random_tensor({2, 3, 1}, DType::f32, 3)}, 0),
                    Catch::StartsWith("concat: tensor 1 has shape (2, 3, 1)"));
  CHECK_THROWS_WITH(ops::concat({a, a}, 2), Catch::StartsWith("concat: dim 2 out of range for a 2-d tensor"));
  CHECK_THROWS_WITH(ops::concat({a, Tensor()}, 0), Catch::StartsWith("concat: an input tensor is undefined"));
}

TEST_CASE("split returns views of x in every layout", "[shape_ops]") {
  uint64_t seed = 100;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (Layout layout : kLayouts) {
      for (const Shape& shape : {Shape{129}, Shape{7, 33}, Shape{33, 1, 7}}) {
        const Tensor x = with_layout(random_tensor(shape, dtype, seed++), layout);
        const std::vector<double> vx = to_vector(x);
        for (int64_t dim = 0; dim < x.dim(); ++dim) {
          const int64_t n = x.size(dim);
          const std::vector<int64_t> sizes = n == 1 ? std::vector<int64_t>{0, 1, 0} : std::vector<int64_t>{1, 0, n - 1};
          INFO(shape_str(shape) << " dim " << dim << " " << to_string(layout) << " " << to_string(dtype));
          const std::vector<Tensor> pieces = ops::split(x, sizes, dim - x.dim());  // negative dim
          REQUIRE(pieces.size() == 3);
          int64_t start = 0;
          for (size_t p = 0; p < pieces.size(); ++p) {
            CHECK(pieces[p].storage() == x.storage());
            CHECK(pieces[p].size(dim) == sizes[p]);
            CHECK(max_abs_diff(pieces[p], narrow_ref(vx, shape, dim, start, sizes[p])) == 0);
            start += sizes[p];
          }
        }
      }
    }
  }
}

TEST_CASE("split pieces write through to x", "[shape_ops]") {
  const Tensor x = zeros({2, 5}, DType::f64);
  const std::vector<Tensor> pieces = ops::split(x, {2, 3}, 1);
  ops::fill_(pieces[1], 7.0);
  CHECK(max_abs_diff(x, {0, 0, 7, 7, 7, 0, 0, 7, 7, 7}) == 0);
}

TEST_CASE("split sizes that do not sum to the dim are errors", "[shape_ops]") {
  const Tensor x = random_tensor({7, 4}, DType::f32, 1);
  CHECK_THROWS_WITH(ops::split(x, {2, 4}, 0), Catch::StartsWith("split: sizes (2, 4) sum to 6, but dim 0 has size 7"));
  CHECK_THROWS_WITH(ops::split(x, {2, 3}, -1), Catch::StartsWith("split: sizes (2, 3) sum to 5, but dim 1 has size 4"));
  CHECK_THROWS_WITH(ops::split(x, {}, 0), Catch::StartsWith("split: sizes () sum to 0, but dim 0 has size 7"));
  CHECK_THROWS_WITH(ops::split(x, {8, -1}, 0), Catch::StartsWith("split: negative size in (8, -1)"));
  CHECK_THROWS_WITH(ops::split(x, {7}, 2), Catch::StartsWith("split: dim 2 out of range"));
}

TEST_CASE("chunk splits like torch.chunk", "[shape_ops]") {
  // Piece sizes pinned from torch 1.13: torch.empty(n).chunk(chunks) for each (n, chunks).
  const std::vector<std::tuple<int64_t, int64_t, std::vector<int64_t>>> cases = {
      {5, 3, {2, 2, 1}}, {6, 4, {2, 2, 2}}, {2, 5, {1, 1}}, {7, 1, {7}}, {129, 4, {33, 33, 33, 30}},
      {1, 3, {1}},       {0, 3, {0, 0, 0}}};
  uint64_t seed = 200;
  for (const auto& [n, chunks, sizes] : cases) {
    for (Layout layout : kLayouts) {
      const Tensor x = with_layout(random_tensor({3, n}, DType::f32, seed++), layout);
      const std::vector<double> vx = to_vector(x);
      INFO("n " << n << " chunks " << chunks << " " << to_string(layout));
      const std::vector<Tensor> pieces = ops::chunk(x, chunks, 1);
      REQUIRE(pieces.size() == sizes.size());
      int64_t start = 0;
      for (size_t p = 0; p < pieces.size(); ++p) {
        CHECK(pieces[p].shape() == Shape{3, sizes[p]});
        CHECK(pieces[p].storage() == x.storage());
        CHECK(max_abs_diff(pieces[p], narrow_ref(vx, {3, n}, 1, start, sizes[p])) == 0);
        start += sizes[p];
      }
    }
  }
  CHECK_THROWS_WITH(ops::chunk(random_tensor({4}, DType::f32, 1), 0, 0),
                    Catch::StartsWith("chunk: chunks must be >= 1"));
}
