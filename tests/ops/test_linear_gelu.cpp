// linear_gelu (a linear layer + GELU, its backward fused with the bias gradient) against a
// naive double loop and against the unfused ops (linear, gelu, gelu_backward, sum, matmul):
// f32 and f64, row counts around the fused kernel's 128-row chunks, no bias, a 3-d input,
// every ISA level, the same bits at any thread count, no rows, argument errors.
#include <cmath>

#include "lib/ops/cpu/isa.h"
#include "lib/ops/ops.h"
#include "tests/ops/gelu_reference.h"
#include "tests/ops/op_test_utils.h"

using namespace hetu;
using namespace hetu::test;

namespace {

struct Problem {
  Tensor x, w, b, g;  // x (rows, K) or (2, rows / 2, K), w (N, K), b (N) or undefined, g like the output
};

Problem make_problem(const Shape& x_shape, int64_t N, bool bias, DType dtype, uint64_t seed) {
  const int64_t K = x_shape.back();
  Shape out_shape = x_shape;
  out_shape.back() = N;
  return {random_tensor(x_shape, dtype, seed, -2, 2), random_tensor({N, K}, dtype, seed + 1, -0.5, 0.5),
          bias ? random_tensor({N}, dtype, seed + 2, -1, 1) : Tensor(), random_tensor(out_shape, dtype, seed + 3)};
}

}  // namespace

TEST_CASE("linear_gelu forward and backward match a double loop", "[linear_gelu]") {
  uint64_t seed = 1;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (int64_t rows : {1, 7, 128, 129, 300}) {
      for (int64_t N : {1, 33, 130}) {
        for (bool bias : {true, false}) {
          const int64_t K = 5;
          const Problem p = make_problem({rows, K}, N, bias, dtype, seed += 10);
          INFO(to_string(dtype) << " rows " << rows << " N " << N << (bias ? " bias" : " no bias"));
          const std::vector<double> x = to_vector(p.x), w = to_vector(p.w), g = to_vector(p.g);
          const std::vector<double> b = bias ? to_vector(p.b) : std::vector<double>(static_cast<size_t>(N), 0.0);
          const ops::LinearGeluResult fwd = ops::linear_gelu(p.x, p.w, p.b);
          const ops::LinearGrads grads = ops::linear_gelu_backward(p.g, p.x, p.w, fwd.pre, bias);
          // The backward reads the op's own pre-activation, checked first against the loop.
          const std::vector<double> pre_op = to_vector(fwd.pre);
          std::vector<double> pre(static_cast<size_t>(rows * N)), out(pre.size()), dpre(pre.size());
          std::vector<double> dx(static_cast<size_t>(rows * K), 0.0), dw(static_cast<size_t>(N * K), 0.0);
          std::vector<double> db(static_cast<size_t>(N), 0.0);
          for (int64_t r = 0; r < rows; ++r) {
            for (int64_t n = 0; n < N; ++n) {
              const size_t i = static_cast<size_t>(r * N + n);
              double acc = b[static_cast<size_t>(n)];
              for (int64_t k = 0; k < K; ++k) acc += x[static_cast<size_t>(r * K + k)] * w[static_cast<size_t>(n * K + k)];
              pre[i] = acc;
              out[i] = gelu_ref(acc);
              dpre[i] = g[i] * gelu_grad_ref(pre_op[i]);
              db[static_cast<size_t>(n)] += dpre[i];
              for (int64_t k = 0; k < K; ++k) {
                dx[static_cast<size_t>(r * K + k)] += dpre[i] * w[static_cast<size_t>(n * K + k)];
                dw[static_cast<size_t>(n * K + k)] += dpre[i] * x[static_cast<size_t>(r * K + k)];
              }
            }
          }
          CHECK(rel_diff(fwd.pre, pre) <= rel_tolerance(dtype));
          CHECK(rel_diff(fwd.out, out) <= rel_tolerance(dtype));
          CHECK(rel_diff(grads.dx, dx) <= rel_tolerance(dtype));
          CHECK(rel_diff(grads.dweight, dw) <= rel_tolerance(dtype));
          REQUIRE(grads.dbias.defined() == bias);
          if (bias) CHECK(rel_diff(grads.dbias, db) <= rel_tolerance(dtype));
        }
      }
    }
  }
}

TEST_CASE("linear_gelu's fused backward equals the unfused ops at every ISA level", "[linear_gelu]") {
  const ops::cpu::IsaLevel saved = ops::cpu::isa_level();
  uint64_t seed = 500;
  for (int level = 0; level <= static_cast<int>(ops::cpu::max_isa_level()); ++level) {
    ops::cpu::set_isa_level(static_cast<ops::cpu::IsaLevel>(level));
    for (DType dtype : {DType::f32, DType::f64}) {
      // A 3-d input of 2 x 150 rows (three chunks, the last partial) and one wide enough for threads.
      for (const auto& [x_shape, N] : {std::pair<Shape, int64_t>{{2, 150, 9}, 67}, {{260, 16}, 200}}) {
        const Problem p = make_problem(x_shape, N, true, dtype, seed += 10);
        INFO("ISA level " << level << " " << to_string(dtype) << " x " << shape_str(x_shape) << " N " << N);
        const ops::LinearGeluResult fwd = ops::linear_gelu(p.x, p.w, p.b);
        const ops::LinearGrads fused = ops::linear_gelu_backward(p.g, p.x, p.w, fwd.pre, true);
        // The reference: the separate ops, as gelu's and linear's backward rules run them.
        const Tensor pre = ops::linear(p.x, p.w, p.b);
        CHECK(rel_diff(fwd.out, ops::gelu(pre)) <= rel_tolerance(dtype));
        const int64_t rows = pre.numel() / N, K = x_shape.back();
        const Tensor dpre = ops::gelu_backward(p.g, fwd.pre).view({rows, N});
        CHECK(rel_diff(fused.dbias, ops::sum(dpre, {0})) <= rel_tolerance(dtype));
        CHECK(rel_diff(fused.dx, ops::matmul(dpre, p.w).view(x_shape)) <= rel_tolerance(dtype));
        CHECK(rel_diff(fused.dweight, ops::matmul(dpre, p.x.view({rows, K}), true, false)) <= rel_tolerance(dtype));
        CHECK(fused.dx.shape() == x_shape);
      }
    }
  }
  ops::cpu::set_isa_level(saved);
}

TEST_CASE("linear_gelu's bias gradient has the same bits at any thread count", "[linear_gelu]") {
  const Problem p = make_problem({1000, 8}, 96, true, DType::f64, 900);  // f64: a regrouped sum shows
  const ops::LinearGeluResult fwd = ops::linear_gelu(p.x, p.w, p.b);
  const ops::LinearGrads grads = ops::linear_gelu_backward(p.g, p.x, p.w, fwd.pre, true);
  const int threads = ops::num_threads();
  for (int t : {1, 2, 3}) {
    ops::set_num_threads(t);
    const ops::LinearGrads again = ops::linear_gelu_backward(p.g, p.x, p.w, fwd.pre, true);
    CHECK(to_vector(again.dbias) == to_vector(grads.dbias));
  }
  ops::set_num_threads(threads);
}

TEST_CASE("linear_gelu with no rows, and argument errors", "[linear_gelu]") {
  const Tensor w = ones({3, 2}), b = ones({3});
  const ops::LinearGeluResult fwd = ops::linear_gelu(zeros({0, 2}), w, b);
  const ops::LinearGrads grads = ops::linear_gelu_backward(zeros({0, 3}), zeros({0, 2}), w, fwd.pre, true);
  CHECK(max_abs_diff(grads.dbias, {0, 0, 0}) == 0);
  CHECK(max_abs_diff(grads.dweight, std::vector<double>(6, 0.0)) == 0);
  CHECK_THROWS_WITH(ops::linear_gelu_backward(zeros({4, 2}), zeros({4, 2}), w, zeros({4, 3}), true),
                    Catch::Contains("linear_gelu_backward: grad (4, 2)"));
  CHECK_THROWS_WITH(ops::linear_gelu_backward(zeros({4, 3}), zeros({5, 2}), w, zeros({4, 3}), true),
                    Catch::Contains("do not fit"));
}
