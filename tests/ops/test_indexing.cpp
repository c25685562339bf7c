// embedding and index_select, forward and scatter-add backward, against naive double loops:
// repeated ids, i32 and i64 ids, every layout of the table, grad and ids, every dim, odd
// sizes, f32 and f64, a case large enough for the threaded path, and out-of-range errors.
#include <cmath>

#include "lib/ops/ops.h"
#include "tests/ops/op_test_utils.h"

using namespace hetu;
using namespace hetu::test;

namespace {

constexpr Layout kLayouts[] = {Layout::contiguous, Layout::transposed, Layout::strided};

// Ids uniform in [0, limit), so small limits repeat ids.
Tensor random_ids(const Shape& shape, int64_t limit, DType dtype, uint64_t seed) {
  std::vector<int64_t> ids;
  for (double v : to_vector(random_tensor(shape, DType::f64, seed, 0.0, static_cast<double>(limit)))) {
    ids.push_back(std::min(limit - 1, static_cast<int64_t>(std::floor(v))));
  }
  return tensor_from(ids, shape).to(dtype);
}

std::vector<int64_t> id_values(const Tensor& ids) {
  std::vector<int64_t> out;
  for (double v : to_vector(ids)) out.push_back(static_cast<int64_t>(v));
  return out;
}

// (outer, rows, inner) around dim of a shape.
void split_around(const Shape& shape, int64_t dim, int64_t& outer, int64_t& rows, int64_t& inner) {
  outer = inner = 1;
  rows = shape[static_cast<size_t>(dim)];
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < dim) outer *= shape[static_cast<size_t>(d)];
    if (d > dim) inner *= shape[static_cast<size_t>(d)];
  }
}

}  // namespace

TEST_CASE("embedding gathers rows of the table", "[indexing]") {
  uint64_t seed = 1;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (DType id_dtype : {DType::i32, DType::i64}) {
      for (const auto& [rows, channels] : {std::pair{1, 7}, std::pair{7, 1}, std::pair{7, 33}, std::pair{33, 129}}) {
        for (const Shape& id_shape : {Shape{1}, Shape{7}, Shape{3, 5}, Shape{2, 3, 7}}) {
          for (Layout layout : kLayouts) {
            const Tensor weight = with_layout(random_tensor({rows, channels}, dtype, seed++), layout);
            const Tensor ids = with_layout(random_ids(id_shape, rows, id_dtype, seed++), layout);
            const std::vector<double> w = to_vector(weight);
            std::vector<double> expected;
            for (int64_t id : id_values(ids)) {
              for (int64_t c = 0; c < channels; ++c) expected.push_back(w[static_cast<size_t>(id * channels + c)]);
            }
            Shape out_shape = id_shape;
            out_shape.push_back(channels);
            INFO(rows << "x" << channels << " ids " << shape_str(id_shape) << " " << to_string(id_dtype) << " "
                      << to_string(layout) << " " << to_string(dtype));
            const Tensor out = ops::embedding(weight, ids);
            REQUIRE(out.shape() == out_shape);
            CHECK(max_abs_diff(out, expected) == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("embedding_backward sums the rows of repeated ids", "[indexing]") {
  uint64_t seed = 100;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (DType id_dtype : {DType::i32, DType::i64}) {
      // The last case has (V + N)·C past the kernel's threading grain.
      for (const auto& [rows, channels, id_shape] :
           {std::tuple{1, 7, Shape{7}}, std::tuple{7, 1, Shape{33}}, std::tuple{7, 33, Shape{3, 5}},
            std::tuple{33, 7, Shape{2, 3, 7}}, std::tuple{33, 129, Shape{16, 129}}}) {
        for (Layout layout : kLayouts) {
          const Tensor ids = with_layout(random_ids(id_shape, rows, id_dtype, seed++), layout);
          Shape grad_shape = id_shape;
          grad_shape.push_back(channels);
          const Tensor grad = with_layout(random_tensor(grad_shape, dtype, seed++), layout);
          const std::vector<double> g = to_vector(grad);
          std::vector<double> expected(static_cast<size_t>(rows * channels), 0.0);
          const std::vector<int64_t> id = id_values(ids);
          for (size_t i = 0; i < id.size(); ++i) {
            for (int64_t c = 0; c < channels; ++c) {
              expected[static_cast<size_t>(id[i] * channels + c)] += g[i * static_cast<size_t>(channels) +
                                                                      static_cast<size_t>(c)];
            }
          }
          INFO(rows << "x" << channels << " ids " << shape_str(id_shape) << " " << to_string(id_dtype) << " "
                    << to_string(layout) << " " << to_string(dtype));
          const Tensor dw = ops::embedding_backward(grad, ids, rows);
          REQUIRE(dw.shape() == Shape{rows, channels});
          CHECK(max_abs_diff(dw, expected) <= tolerance(dtype, 16));
        }
      }
    }
  }
}

TEST_CASE("embedding_backward with every id equal, and unused rows zero", "[indexing]") {
  for (DType id_dtype : {DType::i32, DType::i64}) {
    const Tensor ids = tensor_from<int64_t>({2, 2, 2, 0, 2}, {5}).to(id_dtype);
    const Tensor grad = tensor_from<double>({1, 10, 2, 20, 3, 30, 4, 40, 5, 50}, {5, 2});
    // Row 0 gets token 3, row 2 tokens 0, 1, 2 and 4, rows 1 and 3 nothing.
    CHECK(max_abs_diff(ops::embedding_backward(grad, ids, 4), {4, 40, 0, 0, 11, 110, 0, 0}) == 0);
  }
}

// The sparse form a tied table's gradient takes (Note [Sparse gradients]): in place, only the
// rows of the ids, and the same bits as adding the dense embedding_backward.
TEST_CASE("embedding_backward_add_ adds the summed rows of the ids into a table, bit for bit", "[indexing]") {
  uint64_t seed = 300;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (DType id_dtype : {DType::i32, DType::i64}) {
      // Few rows (every id repeated), many rows (most untouched), and past the threading grain.
      for (const auto& [rows, channels, id_shape] :
           {std::tuple{3, 5, Shape{4, 6}}, std::tuple{257, 9, Shape{2, 7}}, std::tuple{40, 129, Shape{4, 64}}}) {
        for (Layout layout : kLayouts) {
          const Tensor ids = with_layout(random_ids(id_shape, rows, id_dtype, seed++), layout);
          Shape grad_shape = id_shape;
          grad_shape.push_back(channels);
          const Tensor grad = with_layout(random_tensor(grad_shape, dtype, seed++), layout);
          const Tensor table = random_tensor({rows, channels}, dtype, seed++);
          // Naive: each row's contributions summed from zero in position order, then added.
          const std::vector<double> g = to_vector(grad), before = to_vector(table);
          const std::vector<int64_t> id = id_values(ids);
          std::vector<double> expected = before;
          for (int64_t r = 0; r < rows; ++r) {
            for (int64_t c = 0; c < channels; ++c) {
              double acc = 0;
              bool any = false;
              for (size_t i = 0; i < id.size(); ++i) {
                if (id[i] != r) continue;
                any = true;
                acc = dtype == DType::f32 ? static_cast<float>(acc + g[i * static_cast<size_t>(channels) + c])
                                          : acc + g[i * static_cast<size_t>(channels) + c];
              }
              const size_t at = static_cast<size_t>(r * channels + c);
              if (any) expected[at] = dtype == DType::f32 ? static_cast<float>(before[at] + acc) : before[at] + acc;
            }
          }
          INFO(rows << "x" << channels << " ids " << shape_str(id_shape) << " " << to_string(id_dtype) << " "
                    << to_string(layout) << " " << to_string(dtype));
          const Tensor dense = ops::add(table, ops::embedding_backward(grad, ids, rows));
          const Tensor into = table.clone();
          ops::embedding_backward_add_(into, grad, ids);
          CHECK(max_abs_diff(into, expected) == 0);
          CHECK(max_abs_diff(into, to_vector(dense)) == 0);
        }
      }
    }
  }
  const Tensor ids = tensor_from<int64_t>({0, 1}, {2});
  CHECK_THROWS_WITH(ops::embedding_backward_add_(zeros({3, 4}), zeros({2, 5}), ids),
                    Catch::StartsWith("embedding_backward_add_: expected a contiguous (V, C) target"));
  CHECK_THROWS_WITH(ops::embedding_backward_add_(zeros({3, 4}), zeros({2, 4}), tensor_from<int64_t>({0, 3}, {2})),
                    Catch::StartsWith("embedding_backward_add_: id 3 at position 1 is outside [0, 3)"));
}

TEST_CASE("embedding ids outside 0..V-1 are errors naming the id and V", "[indexing]") {
  const Tensor weight = random_tensor({7, 3}, DType::f32, 5);
  for (DType id_dtype : {DType::i32, DType::i64}) {
    INFO(to_string(id_dtype));
    const Tensor too_big = tensor_from<int64_t>({0, 6, 7, 1}, {2, 2}).to(id_dtype);
    CHECK_THROWS_WITH(ops::embedding(weight, too_big),
                      Catch::StartsWith("embedding: id 7 at position 2 is outside [0, 7)"));
    const Tensor negative = tensor_from<int64_t>({-1}, {1}).to(id_dtype);
    CHECK_THROWS_WITH(ops::embedding(weight, negative), Catch::StartsWith("embedding: id -1 at position 0"));
    CHECK_THROWS_WITH(ops::embedding_backward(ones({2, 2, 3}), too_big, 7),
                      Catch::StartsWith("embedding_backward: id 7 at position 2 is outside [0, 7)"));
  }
  const Tensor ids = tensor_from<int64_t>({0, 1}, {2});
  CHECK_THROWS_WITH(ops::embedding(weight.to(DType::f64), ids.to(DType::f32)),
                    Catch::Contains("op embedding not implemented") && Catch::Contains("f32"));
  CHECK_THROWS_WITH(ops::embedding(random_tensor({7}, DType::f32, 6), ids),
                    Catch::StartsWith("embedding: weight must be (V, C), got shape (7,)"));
  CHECK_THROWS_WITH(ops::embedding_backward(ones({3, 4}), ids, 7),
                    Catch::StartsWith("embedding_backward: grad shape (3, 4) is not ids shape (2,) plus a channel"));
  CHECK_THROWS_WITH(ops::embedding_backward(ones({2, 4}), ids, -1),
                    Catch::StartsWith("embedding_backward: num_rows must be >= 0"));
}

TEST_CASE("index_select and its backward along every dim", "[indexing]") {
  uint64_t seed = 300;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (DType id_dtype : {DType::i32, DType::i64}) {
      for (const Shape& shape : {Shape{7}, Shape{33, 7}, Shape{3, 5, 129}, Shape{1, 7, 1}}) {
        for (int64_t dim = -static_cast<int64_t>(shape.size()); dim < static_cast<int64_t>(shape.size()); ++dim) {
          const int64_t d = dim < 0 ? dim + static_cast<int64_t>(shape.size()) : dim;
          int64_t outer, rows, inner;
          split_around(shape, d, outer, rows, inner);
          for (int64_t k : {1, 5, 40}) {
            for (Layout layout : kLayouts) {
              const Tensor x = with_layout(random_tensor(shape, dtype, seed++), layout);
              const Tensor index = with_layout(random_ids({k}, rows, id_dtype, seed++), layout);
              const std::vector<int64_t> idx = id_values(index);
              Shape out_shape = shape;
              out_shape[static_cast<size_t>(d)] = k;
              const Tensor grad = with_layout(random_tensor(out_shape, dtype, seed++), layout);
              const std::vector<double> vx = to_vector(x), vg = to_vector(grad);
              std::vector<double> expected, expected_dx(vx.size(), 0.0);
              for (int64_t o = 0; o < outer; ++o) {
                for (int64_t j = 0; j < k; ++j) {
                  for (int64_t i = 0; i < inner; ++i) {
                    const size_t src = static_cast<size_t>((o * rows + idx[static_cast<size_t>(j)]) * inner + i);
                    expected.push_back(vx[src]);
                    expected_dx[src] += vg[static_cast<size_t>((o * k + j) * inner + i)];
                  }
                }
              }
              INFO(shape_str(shape) << " dim " << dim << " k " << k << " " << to_string(id_dtype) << " "
                                    << to_string(layout) << " " << to_string(dtype));
              const Tensor out = ops::index_select(x, dim, index);
              REQUIRE(out.shape() == out_shape);
              CHECK(max_abs_diff(out, expected) == 0);
              const Tensor dx = ops::index_select_backward(grad, dim, index, shape);
              REQUIRE(dx.shape() == shape);
              CHECK(max_abs_diff(dx, expected_dx) <= tolerance(dtype, 16));
            }
          }
        }
      }
    }
  }
}

TEST_CASE("index_select argument errors", "[indexing]") {
  const Tensor x = random_tensor({4, 5}, DType::f32, 9);
  const Tensor index = tensor_from<int64_t>({0, 4, 5}, {3});
  CHECK_THROWS_WITH(ops::index_select(x, 1, index),
                    Catch::StartsWith("index_select: index 5 at position 2 is outside [0, 5)"));
  CHECK_THROWS_WITH(ops::index_select(x, 0, tensor_from<int32_t>({-2}, {1})),
                    Catch::StartsWith("index_select: index -2 at position 0 is outside [0, 4)"));
  CHECK_THROWS_WITH(ops::index_select(x, 2, index), Catch::StartsWith("index_select: dim 2 out of range for a 2-d"));
  CHECK_THROWS_WITH(ops::index_select(x, 0, tensor_from<int64_t>({0, 1}, {1, 2})),
                    Catch::StartsWith("index_select: index must be 1-d, got shape (1, 2)"));
  CHECK_THROWS_WITH(ops::index_select_backward(ones({4, 2}), 1, index, {4, 5}),
                    Catch::StartsWith("index_select_backward: grad shape (4, 2) does not match (4, 3)"));
  CHECK_THROWS_WITH(ops::index_select_backward(ones({4, 3}), 1, index, {4, 5}),
                    Catch::StartsWith("index_select_backward: index 5 at position 2 is outside [0, 5)"));
}
