// blocked_sgemm (lib/ops/cpu/blocked_sgemm.h) against a naive triple loop in f64, at every ISA
// level this CPU has, with every transpose pair, sizes off the register and cache blocks
// (1 row, k = 1, k past one block, n past one block), padded leading dimensions (row-major a
// and b read in place; 4 KiB apart: packed) and both c modes (overwrite: c starts as garbage;
// accumulate); and one thread against two.
#include <cmath>
#include <vector>

#include "lib/core/rng.h"
#include "lib/ops/cpu/blocked_sgemm.h"
#include "lib/ops/cpu/gemm_choice.h"
#include "lib/ops/cpu/isa.h"
#include "lib/ops/ops.h"
#include "tests/ops/op_test_utils.h"

using hetu::ops::cpu::IsaLevel;

namespace {

std::vector<float> random_floats(int64_t count, uint64_t seed) {
  std::vector<double> values(static_cast<size_t>(count));
  hetu::CounterRng rng(seed, "blocked_sgemm");
  rng.fill_uniform(values.data(), 0, count, -1.0, 1.0);
  return std::vector<float>(values.begin(), values.end());
}

struct Case {
  bool ta, tb;
  int64_t m, n, k;
  bool accumulate;
};

// Runs one case with leading dimensions padded by 3 and checks every element of c (and that
// the padding columns of c stay untouched) against the naive sum.
void check_case(const Case& t, const char* level) {
  const int64_t a_rows = t.ta ? t.k : t.m, a_cols = t.ta ? t.m : t.k;
  const int64_t b_rows = t.tb ? t.n : t.k, b_cols = t.tb ? t.k : t.n;
  const int64_t lda = a_cols + 3, ldb = b_cols + 3, ldc = t.n + 3;
  const std::vector<float> a = random_floats(a_rows * lda, 1), b = random_floats(b_rows * ldb, 2);
  const std::vector<float> c0 = random_floats(t.m * ldc, 3);
  std::vector<float> c = c0;
  hetu::ops::cpu::blocked_sgemm(t.ta, t.tb, t.m, t.n, t.k, a.data(), lda, b.data(), ldb, t.accumulate, c.data(), ldc);
  INFO(level << " ta=" << t.ta << " tb=" << t.tb << " m=" << t.m << " n=" << t.n << " k=" << t.k
             << " accumulate=" << t.accumulate);
  int64_t bad = 0;
  for (int64_t i = 0; i < t.m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const float got = c[static_cast<size_t>(i * ldc + j)];
      if (j >= t.n) {  // padding of c: never written
        bad += got != c0[static_cast<size_t>(i * ldc + j)];
        continue;
      }
      double sum = t.accumulate ? c0[static_cast<size_t>(i * ldc + j)] : 0.0, magnitude = std::fabs(sum);
      for (int64_t p = 0; p < t.k; ++p) {
        const double x = a[static_cast<size_t>(t.ta ? p * lda + i : i * lda + p)];
        const double y = b[static_cast<size_t>(t.tb ? j * ldb + p : p * ldb + j)];
        sum += x * y;
        magnitude += std::fabs(x * y);
      }
      // f32 sums of k products: a few units of 2^-24 per term in the worst case.
      const double tol = 4.0 * std::ldexp(1.0, -24) * static_cast<double>(t.k + 1) * magnitude + 1e-30;
      bad += !(std::fabs(got - sum) <= tol);
    }
  }
  CHECK(bad == 0);
}

struct LevelGuard {
  IsaLevel saved = hetu::ops::cpu::isa_level();
  ~LevelGuard() { hetu::ops::cpu::set_isa_level(saved); }
};

const char* level_name(IsaLevel level) {
  return level == IsaLevel::avx512 ? "avx512" : level == IsaLevel::avx2 ? "avx2" : "baseline";
}

}  // namespace

TEST_CASE("blocked_sgemm matches a naive loop at every ISA level", "[matmul][isa]") {
  LevelGuard guard;
  for (int level = 0; level <= static_cast<int>(hetu::ops::cpu::max_isa_level()); ++level) {
    hetu::ops::cpu::set_isa_level(static_cast<IsaLevel>(level));
    for (int trans = 0; trans < 4; ++trans) {
      const bool ta = (trans & 1) != 0, tb = (trans & 2) != 0;
      for (const Case& shape : {Case{ta, tb, 37, 45, 29, false}, Case{ta, tb, 1, 300, 7, true},
                                Case{ta, tb, 25, 1, 515, false}, Case{ta, tb, 13, 33, 1, true},
                                Case{ta, tb, 50, 290, 1030, true}, Case{ta, tb, 24, 64, 64, false},
                                Case{ta, tb, 5, 1021, 40, false},    // b's rows 4 KiB apart when tb = 0
                                Case{ta, tb, 13, 40, 1021, false}}) {  // a's rows 4 KiB apart when ta = 0
        check_case(shape, level_name(static_cast<IsaLevel>(level)));
      }
    }
  }
}

TEST_CASE("blocked_sgemm with k = 0 zeroes or keeps c", "[matmul]") {
  std::vector<float> c{1, 2, 3, 4};
  hetu::ops::cpu::blocked_sgemm(false, false, 2, 2, 0, nullptr, 1, nullptr, 2, true, c.data(), 2);
  CHECK(c == std::vector<float>{1, 2, 3, 4});
  hetu::ops::cpu::blocked_sgemm(false, false, 2, 2, 0, nullptr, 1, nullptr, 2, false, c.data(), 2);
  CHECK(c == std::vector<float>{0, 0, 0, 0});
}

TEST_CASE("blocked_sgemm gives the same bits on one thread and on two", "[matmul]") {
  const int64_t m = 203, n = 170, k = 600;
  const std::vector<float> a = random_floats(m * k, 4), b = random_floats(k * n, 5);
  const int saved = hetu::ops::num_threads();
  std::vector<float> one(static_cast<size_t>(m * n)), two(one.size());
  hetu::ops::set_num_threads(1);
  hetu::ops::cpu::blocked_sgemm(false, true, m, n, k, a.data(), k, b.data(), k, false, one.data(), n);
  hetu::ops::set_num_threads(2);
  hetu::ops::cpu::blocked_sgemm(false, true, m, n, k, a.data(), k, b.data(), k, false, two.data(), n);
  hetu::ops::set_num_threads(saved);
  CHECK(one == two);
}

// matmul and linear routed to blocked_sgemm (as HETU_CPU_GEMM=blocked does): transposed views
// of both operands, and linear's bias (beta = 1) and residual, against naive sums in f64.
TEST_CASE("matmul and linear through blocked_sgemm match naive sums", "[matmul]") {
  using namespace hetu;
  if (ops::cpu::max_isa_level() == IsaLevel::baseline) {
    WARN("no AVX2 on this CPU: blocked_sgemm is never chosen");
    return;
  }
  struct Restore {
    ops::cpu::GemmChoice saved = ops::cpu::gemm_choice();
    ~Restore() { ops::cpu::set_gemm_choice(saved); }
  } restore;
  ops::cpu::set_gemm_choice(ops::cpu::GemmChoice::blocked);
  const int64_t m = 130, n = 200, k = 700;  // m·n·k >= 2^24: blocked_sgemm's class
  REQUIRE(ops::cpu::blocked_sgemm_chosen(m, n, k));
  const Tensor x = test::random_tensor({m, k}, DType::f32, 6), w = test::random_tensor({n, k}, DType::f32, 7);
  const Tensor bias = test::random_tensor({n}, DType::f32, 8), residual = test::random_tensor({m, n}, DType::f32, 9);
  const std::vector<double> xs = to_vector(x), ws = to_vector(w), bs = to_vector(bias);
  const std::vector<double> rs = to_vector(residual);
  // out(i, j) = base(i, j) + Σ_p x(i, p) w(j, p); |error| within f32 rounding of the k-term sum.
  auto check = [&](const Tensor& out, bool with_bias_and_residual) {
    const std::vector<double> got = to_vector(out);
    int64_t bad = 0;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = with_bias_and_residual ? bs[static_cast<size_t>(j)] + rs[static_cast<size_t>(i * n + j)] : 0.0;
        double magnitude = std::fabs(sum);
        for (int64_t p = 0; p < k; ++p) {
          const double term = xs[static_cast<size_t>(i * k + p)] * ws[static_cast<size_t>(j * k + p)];
          sum += term;
          magnitude += std::fabs(term);
        }
        bad += !(std::fabs(got[static_cast<size_t>(i * n + j)] - sum) <=
                 4.0 * std::ldexp(1.0, -24) * static_cast<double>(k + 2) * magnitude);
      }
    }
    CHECK(bad == 0);
  };
  const Tensor x_stored_transposed = x.transpose(0, 1).contiguous(), w_t = w.transpose(0, 1).contiguous();
  check(ops::matmul(x, w, false, true), false);                        // x wᵀ: b transposed
  check(ops::matmul(x_stored_transposed, w, true, true), false);       // both transposed
  check(ops::matmul(x, w_t, false, false), false);                     // wᵀ stored row-major
  check(ops::matmul(x_stored_transposed.transpose(0, 1), w_t), false);  // a column-major view of x
  check(ops::linear(x, w, bias, residual), true);                      // beta = 1, then + residual
}

// Note [GEMM choice]: automatic takes blocked_sgemm only at AVX-512 and only when OpenBLAS's
// kernel set for the CPU has no AVX-512 sgemm; HETU_CPU_GEMM values are checked.
TEST_CASE("the automatic GEMM choice and HETU_CPU_GEMM's values", "[matmul]") {
  using hetu::ops::cpu::blocked_preferred;
  using hetu::ops::cpu::GemmChoice;
  using hetu::ops::cpu::parse_gemm_choice;
  CHECK(blocked_preferred(IsaLevel::avx512, "Haswell"));
  CHECK(blocked_preferred(IsaLevel::avx512, "Zen"));
  CHECK_FALSE(blocked_preferred(IsaLevel::avx512, "SkylakeX"));
  CHECK_FALSE(blocked_preferred(IsaLevel::avx512, "COOPERLAKE"));
  CHECK_FALSE(blocked_preferred(IsaLevel::avx512, "SapphireRapids"));
  CHECK_FALSE(blocked_preferred(IsaLevel::avx2, "Haswell"));
  CHECK_FALSE(blocked_preferred(IsaLevel::baseline, "Haswell"));
  CHECK(parse_gemm_choice("auto") == GemmChoice::automatic);
  CHECK(parse_gemm_choice("openblas") == GemmChoice::openblas);
  CHECK(parse_gemm_choice("blocked") == GemmChoice::blocked);
  CHECK_THROWS_WITH(parse_gemm_choice("mkl"), Catch::Contains("HETU_CPU_GEMM=\"mkl\": expected auto, openblas or blocked"));
  // Small GEMMs (the attention's per head) stay with OpenBLAS whatever the choice.
  struct Restore {
    GemmChoice saved = hetu::ops::cpu::gemm_choice();
    ~Restore() { hetu::ops::cpu::set_gemm_choice(saved); }
  } restore;
  hetu::ops::cpu::set_gemm_choice(GemmChoice::blocked);
  CHECK_FALSE(hetu::ops::cpu::blocked_sgemm_chosen(256, 64, 256));
  CHECK(hetu::ops::cpu::blocked_sgemm_chosen(1024, 256, 256) == (hetu::ops::cpu::isa_level() != IsaLevel::baseline));
  hetu::ops::cpu::set_gemm_choice(GemmChoice::openblas);
  CHECK_FALSE(hetu::ops::cpu::blocked_sgemm_chosen(1024, 256, 256));
}
