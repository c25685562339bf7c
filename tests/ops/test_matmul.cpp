// matmul and linear against naive loops in double: transposes (flags and views), batch
// broadcasting, odd sizes, f32 and f64, and shape errors.
#include "lib/ops/ops.h"
#include "tests/ops/op_test_utils.h"

using namespace hetu;
using namespace hetu::test;

namespace {

// Naive reference: out[b, i, j] = Σ_k A[b, i, k] B[b, k, j] over broadcast batch dims,
// with A = a or aᵀ, B = b or bᵀ (on the last two dims).
std::vector<double> naive_matmul(const Tensor& a, const Tensor& b, bool ta, bool tb, const Shape& out_shape) {
  const int64_t m = out_shape[out_shape.size() - 2], n = out_shape.back();
  const int64_t k = ta ? a.size(-2) : a.size(-1);
  const Shape batch(out_shape.begin(), out_shape.end() - 2);
  Shape af = batch, bf = batch;
  af.insert(af.end(), a.shape().end() - 2, a.shape().end());
  bf.insert(bf.end(), b.shape().end() - 2, b.shape().end());
  const std::vector<double> va = to_vector(a.expand(af)), vb = to_vector(b.expand(bf));
  const int64_t nb = shape_numel(batch);
  const int64_t ar = a.size(-2), ac = a.size(-1), br = b.size(-2), bc = b.size(-1);
  std::vector<double> out(static_cast<size_t>(nb * m * n), 0.0);
  for (int64_t bi = 0; bi < nb; ++bi) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) {
          const double x = ta ? va[static_cast<size_t>(bi * ar * ac + p * ac + i)] : va[static_cast<size_t>(bi * ar * ac + i * ac + p)];
          const double y = tb ? vb[static_cast<size_t>(bi * br * bc + j * bc + p)] : vb[static_cast<size_t>(bi * br * bc + p * bc + j)];
          acc += x * y;
        }
        out[static_cast<size_t>((bi * m + i) * n + j)] = acc;
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("matmul matches a naive loop for transposes, layouts, batches and odd sizes", "[matmul]") {
  uint64_t seed = 1;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (auto [m, k, n] : {std::array<int64_t, 3>{1, 1, 1}, {7, 33, 1}, {33, 7, 129}, {129, 33, 7}, {16, 64, 32}}) {
      for (bool ta : {false, true}) {
        for (bool tb : {false, true}) {
          for (Layout layout : {Layout::contiguous, Layout::transposed, Layout::strided}) {
            const Shape sa = ta ? Shape{3, k, m} : Shape{3, m, k};
            const Shape sb = tb ? Shape{n, k} : Shape{k, n};  // 2-d weight broadcast over the batch
            const Tensor a = with_layout(random_tensor(sa, dtype, seed++), layout);
            const Tensor b = with_layout(random_tensor(sb, dtype, seed++), layout);
            INFO("m,k,n=" << m << "," << k << "," << n << " ta=" << ta << " tb=" << tb << " " << to_string(layout)
                          << " " << to_string(dtype));
            const Tensor out = ops::matmul(a, b, ta, tb);
            REQUIRE(out.shape() == Shape{3, m, n});
            CHECK(max_abs_diff(out, naive_matmul(a, b, ta, tb, out.shape())) <= tolerance(dtype, static_cast<double>(k)));
          }
        }
      }
    }
  }
}

TEST_CASE("batched matmul broadcasts batch dims", "[matmul]") {
  const Tensor a = random_tensor({2, 1, 5, 3}, DType::f64, 11);
  const Tensor b = random_tensor({4, 3, 6}, DType::f64, 12);
  const Tensor out = ops::matmul(a, b);
  REQUIRE(out.shape() == Shape{2, 4, 5, 6});
  CHECK(max_abs_diff(out, naive_matmul(a, b, false, false, out.shape())) <= 1e-12);
  // Attention-style views: (B, T, H, D) transposed to (B, H, T, D), times its transpose.
  const Tensor x = random_tensor({2, 9, 3, 8}, DType::f32, 13).transpose(1, 2);
  const Tensor scores = ops::matmul(x, x, false, true);
  REQUIRE(scores.shape() == Shape{2, 3, 9, 9});
  CHECK(max_abs_diff(scores, naive_matmul(x, x, false, true, scores.shape())) <= 1e-4);
}

TEST_CASE("matmul rejects bad shapes and dtypes", "[matmul]") {
  using Catch::Contains;
  const Tensor a = zeros({2, 3});
  CHECK_THROWS_WITH(ops::matmul(a, zeros({4, 5})), Contains("matmul: inner dims differ: 3 vs 4"));
  CHECK_THROWS_WITH(ops::matmul(zeros({3}), a), Contains("matmul: operands need at least 2 dims"));
  CHECK_THROWS_WITH(ops::matmul(zeros({2, 3}, DType::i32), zeros({3, 2}, DType::i32)),
                    Contains("op matmul not implemented for device cpu / dtype i32"));
  CHECK_THROWS_WITH(ops::matmul(a, zeros({3, 2}, DType::f64)), Contains("matmul: dtypes differ"));
  CHECK_THROWS_WITH(ops::matmul(zeros({2, 2, 3}), zeros({3, 3, 2})), Contains("do not broadcast"));
}

// linear against a naive loop: out[r, j] = residual[r, j] + bias[j] + Σ_p x[r, p] w[j, p] over
// the rows r of x's leading dims; x, w, bias, residual in every layout, with and without bias
// and residual, odd sizes and K = 0.
TEST_CASE("linear matches a naive loop with and without bias and residual", "[matmul]") {
  uint64_t seed = 100;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (auto [m, k, n] : {std::array<int64_t, 3>{1, 1, 1}, {7, 33, 1}, {33, 7, 129}, {5, 0, 3}}) {
      for (auto [with_bias, with_residual] : {std::pair{false, false}, {true, false}, {false, true}, {true, true}}) {
        for (Layout layout : {Layout::contiguous, Layout::transposed, Layout::strided}) {
          const Tensor x = with_layout(random_tensor({2, m, k}, dtype, seed++), layout);
          const Tensor w = with_layout(random_tensor({n, k}, dtype, seed++), layout);
          const Tensor b = with_bias ? with_layout(random_tensor({1, n}, dtype, seed++), layout).squeeze(0) : Tensor();
          const Tensor res = with_residual ? with_layout(random_tensor({2, m, n}, dtype, seed++), layout) : Tensor();
          INFO("m,k,n=" << m << "," << k << "," << n << " bias=" << with_bias << " residual=" << with_residual << " "
                        << to_string(layout) << " " << to_string(dtype));
          const std::vector<double> vx = to_vector(x), vw = to_vector(w);
          const std::vector<double> vb = with_bias ? to_vector(b) : std::vector<double>(static_cast<size_t>(n), 0.0);
          const std::vector<double> vr = with_residual ? to_vector(res) : std::vector<double>(static_cast<size_t>(2 * m * n), 0.0);
          std::vector<double> expected;
          for (int64_t r = 0; r < 2 * m; ++r) {
            for (int64_t j = 0; j < n; ++j) {
              double acc = vr[static_cast<size_t>(r * n + j)] + vb[static_cast<size_t>(j)];
              for (int64_t p = 0; p < k; ++p) acc += vx[static_cast<size_t>(r * k + p)] * vw[static_cast<size_t>(j * k + p)];
              expected.push_back(acc);
            }
          }
          const Tensor out = ops::linear(x, w, b, res);
          REQUIRE(out.shape() == Shape{2, m, n});
          CHECK(max_abs_diff(out, expected) <= tolerance(dtype, static_cast<double>(k + 2)));
        }
      }
    }
  }
}

TEST_CASE("linear rejects mismatched shapes", "[matmul]") {
  using Catch::Contains;
  CHECK_THROWS_WITH(ops::linear(zeros({2, 3}), zeros({4, 5}), Tensor()), Contains("linear: input (2, 3) does not match a weight (4, 5)"));
  CHECK_THROWS_WITH(ops::linear(zeros({2, 3}), zeros({4, 3}), zeros({3})), Contains("linear: bias (3,) for a weight (4, 3) (want (4,))"));
  CHECK_THROWS_WITH(ops::linear(zeros({2, 3}), zeros({4, 3}), zeros({4}, DType::f64)), Contains("linear: dtypes differ"));
  CHECK_THROWS_WITH(ops::linear(zeros({2, 3}), zeros({4, 3}), Tensor(), zeros({2, 3})),
                    Contains("linear: residual (2, 3) for an output (2, 4)"));
}
