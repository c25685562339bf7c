// linear_backward (the linear layer's gradients; on the CPU the bias column sums ride on the
// weight GEMM, in fixed row pieces) against a naive double loop and against the reference ops
// (matmul, matmul, sum): f32 and f64, row counts around the 256-row pieces, no bias, the same
// bits at any thread count, no rows, argument errors.
#include <cmath>

#include "lib/ops/cpu/linear_backward.h"
#include "lib/ops/ops.h"
#include "tests/ops/op_test_utils.h"

using namespace hetu;
using namespace hetu::test;

namespace {

constexpr int64_t kChunk = ops::cpu::kBiasRowChunk;

}  // namespace

TEST_CASE("linear_backward matches a double loop", "[linear_backward]") {
  uint64_t seed = 1;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (int64_t rows : {int64_t{1}, int64_t{7}, kChunk - 1, kChunk, kChunk + 1, 2 * kChunk + 100}) {
      for (int64_t N : {1, 37, 130}) {
        for (bool bias : {true, false}) {
          const int64_t K = 6;
          const Tensor g = random_tensor({rows, N}, dtype, seed += 10), x = random_tensor({rows, K}, dtype, seed + 1, -2, 2);
          const Tensor w = random_tensor({N, K}, dtype, seed + 2, -0.5, 0.5);
          INFO(to_string(dtype) << " rows " << rows << " N " << N << (bias ? " bias" : " no bias"));
          const ops::LinearGrads r = ops::linear_backward(g, x, w, bias);
          const std::vector<double> gv = to_vector(g), xv = to_vector(x), wv = to_vector(w);
          std::vector<double> dx(static_cast<size_t>(rows * K), 0.0), dw(static_cast<size_t>(N * K), 0.0);
          std::vector<double> db(static_cast<size_t>(N), 0.0);
          for (int64_t i = 0; i < rows; ++i) {
            for (int64_t n = 0; n < N; ++n) {
              const double gi = gv[static_cast<size_t>(i * N + n)];
              db[static_cast<size_t>(n)] += gi;
              for (int64_t k = 0; k < K; ++k) {
                dx[static_cast<size_t>(i * K + k)] += gi * wv[static_cast<size_t>(n * K + k)];
                dw[static_cast<size_t>(n * K + k)] += gi * xv[static_cast<size_t>(i * K + k)];
              }
            }
          }
          CHECK(rel_diff(r.dx, dx) <= rel_tolerance(dtype));
          CHECK(rel_diff(r.dweight, dw) <= rel_tolerance(dtype));
          REQUIRE(r.dbias.defined() == bias);
          if (bias) CHECK(rel_diff(r.dbias, db) <= rel_tolerance(dtype));
        }
      }
    }
  }
}

TEST_CASE("linear_backward's bias sums have the bits of sum, its weight GEMM those of matmul within one piece",
          "[linear_backward]") {
  uint64_t seed = 300;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (int64_t rows : {int64_t{5}, kChunk, 3 * kChunk + 17}) {
      const int64_t N = 600, K = 9;  // 600 columns: two column blocks of the sums
      const Tensor g = random_tensor({rows, N}, dtype, seed += 10), x = random_tensor({rows, K}, dtype, seed + 1);
      const Tensor w = random_tensor({N, K}, dtype, seed + 2);
      INFO(to_string(dtype) << " rows " << rows);
      const ops::LinearGrads r = ops::linear_backward(g, x, w, true);
      CHECK(to_vector(r.dbias) == to_vector(ops::sum(g, {0})));
      CHECK(to_vector(r.dx) == to_vector(ops::matmul(g, w)));
      const Tensor dw = ops::matmul(g, x, true, false);
      if (rows <= kChunk) {
        CHECK(to_vector(r.dweight) == to_vector(dw));
      } else {
        CHECK(rel_diff(r.dweight, to_vector(dw)) <= rel_tolerance(dtype));
      }
    }
  }
}

TEST_CASE("linear_backward has the same bits at any thread count", "[linear_backward]") {
  // Three row pieces and 1,100 columns (three column blocks of the sums): a sum regrouped by
  // the thread count shows. dbias is hetu's own loop: the same bits at any thread count.
  // dweight's pieces are fixed too, but each piece is one OpenBLAS GEMM, whose f32 bits
  // OpenBLAS itself may change with its thread count (its Haswell kernels do for these
  // shapes, its SkylakeX kernels do not; dx, one matmul, changes on both): so at every thread
  // count dweight has the bits of the fixed 256-row pieces' GEMMs run at that thread count.
  for (DType dtype : {DType::f32, DType::f64}) {
    const int64_t rows = 2 * kChunk + 50;
    const Tensor g = random_tensor({rows, 1100}, dtype, 900), x = random_tensor({rows, 8}, dtype, 901);
    const Tensor w = random_tensor({1100, 8}, dtype, 902);
    auto pieced_dweight = [&] {
      Tensor dw = ops::matmul(g.narrow(0, 0, kChunk), x.narrow(0, 0, kChunk), true, false);
      for (int64_t r0 = kChunk; r0 < rows; r0 += kChunk) {
        const int64_t m = std::min(kChunk, rows - r0);
        dw = ops::add(dw, ops::matmul(g.narrow(0, r0, m), x.narrow(0, r0, m), true, false));
      }
      return to_vector(dw);
    };
    const int threads = ops::num_threads();
    ops::set_num_threads(1);
    const ops::LinearGrads one = ops::linear_backward(g, x, w, true);
    CHECK(to_vector(one.dweight) == pieced_dweight());
    for (int t : {2, 3}) {
      INFO(to_string(dtype) << ", " << t << " threads");
      ops::set_num_threads(t);
      const ops::LinearGrads again = ops::linear_backward(g, x, w, true);
      CHECK(to_vector(again.dbias) == to_vector(one.dbias));
      CHECK(to_vector(again.dweight) == pieced_dweight());
    }
    ops::set_num_threads(threads);
  }
}

TEST_CASE("linear_backward with no rows, and argument errors", "[linear_backward]") {
  const Tensor w = ones({3, 2});
  const ops::LinearGrads r = ops::linear_backward(zeros({0, 3}), zeros({0, 2}), w, true);
  CHECK(r.dx.shape() == Shape{0, 2});
  CHECK(max_abs_diff(r.dbias, {0, 0, 0}) == 0);
  CHECK(max_abs_diff(r.dweight, std::vector<double>(6, 0.0)) == 0);
  CHECK_THROWS_WITH(ops::linear_backward(zeros({4, 2}), zeros({4, 2}), w, true),
                    Catch::Contains("linear_backward: grad (4, 2), x (4, 2) and weight (3, 2) do not fit"));
  CHECK_THROWS_WITH(ops::linear_backward(zeros({4, 3}), zeros({5, 2}), w, true), Catch::Contains("do not fit"));
  CHECK_THROWS_WITH(ops::linear_backward(zeros({4, 3}), zeros({4, 2}, DType::f64), w, true),
                    Catch::Contains("linear_backward"));
}
