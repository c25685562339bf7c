// blocked_sgemm (lib/ops/cpu/blocked_sgemm.h) against a naive triple loop in f64, at every ISA
// level this CPU has, with every transpose pair, sizes off the register and cache blocks
// (1 row, k = 1, k past one block, n past one block), padded leading dimensions (row-major a
// and b read in place; 4 KiB apart: packed) and both c modes (overwrite: c starts as garbage;
// accumulate); and one thread against two.
#include <cmath>
#include <vector>

#include "lib/core/rng.h"
#include "lib/ops/cpu/blocked_sgemm.h"
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
