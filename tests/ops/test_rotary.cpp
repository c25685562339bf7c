// Tests for ops::rotary against a naive loop written here with std::cos / std::sin:
// for i < D/2, angle = (offset + t) · f_i (negated when inverse), with f_i = theta^(-2i/D)
// (ops::rotary_frequencies) or any table the caller gives (Llama 3's scaled frequencies),
// out_i = x_i cos − x_{i+D/2} sin, out_{i+D/2} = x_{i+D/2} cos + x_i sin. Also: the inverse
// undoes the forward, an offset p equals rows p.. of a longer sequence, and the positions form
// turns every (b, t) row by its own position (restarting per packed document).
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "lib/ops/ops.h"
#include "op_test_utils.h"

namespace {

using hetu::DType;
using hetu::Shape;
using hetu::Tensor;
using hetu::test::Layout;

// x is (B, T, H, D), row-major values.
std::vector<double> naive_rotary(const std::vector<double>& x, const Shape& shape, int64_t offset,
                                 const std::vector<double>& freq, bool inverse) {
  const int64_t B = shape[0], T = shape[1], H = shape[2], D = shape[3], half = D / 2;
  std::vector<double> out(x.size());
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t h = 0; h < H; ++h) {
        const size_t base = static_cast<size_t>(((b * T + t) * H + h) * D);
        for (int64_t i = 0; i < half; ++i) {
          double angle = static_cast<double>(offset + t) * freq[static_cast<size_t>(i)];
          if (inverse) angle = -angle;
          const double lo = x[base + static_cast<size_t>(i)], hi = x[base + static_cast<size_t>(i + half)];
          out[base + static_cast<size_t>(i)] = lo * std::cos(angle) - hi * std::sin(angle);
          out[base + static_cast<size_t>(i + half)] = hi * std::cos(angle) + lo * std::sin(angle);
        }
      }
    }
  }
  return out;
}

std::vector<double> theta_frequencies(int64_t D, double theta) {
  std::vector<double> f;
  for (int64_t i = 0; i < D / 2; ++i) f.push_back(std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(D)));
  return f;
}

}  // namespace

TEST_CASE("rotary_frequencies are theta^(-2i/D)", "[rotary]") {
  for (int64_t D : {2, 8, 64}) {
    const std::vector<double> got = hetu::ops::rotary_frequencies(D, 500000.0);
    const std::vector<double> want = theta_frequencies(D, 500000.0);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).epsilon(1e-15));
  }
}

TEST_CASE("rotary turns each pair by the caller's frequency table", "[rotary]") {
  const std::vector<double> freq = {0.9, 0.05, 2.5e-3, 7e-5};  // no theta makes these
  for (DType dtype : {DType::f32, DType::f64}) {
    for (bool inverse : {false, true}) {
      const Shape shape{2, 7, 3, 8};
      const Tensor x = hetu::test::random_tensor(shape, dtype, 11);
      const Tensor out = hetu::ops::rotary(x, 33, freq, inverse);
      CHECK(hetu::test::max_abs_diff(out, naive_rotary(hetu::to_vector(x), shape, 33, freq, inverse)) <=
            hetu::test::tolerance(dtype));
    }
  }
}

TEST_CASE("rotary matches the naive loop", "[rotary]") {
  uint64_t seed = 100;
  for (int64_t D : {2, 8, 64}) {
    for (int64_t offset : {0, 1, 17, 4096}) {
      for (double theta : {10000.0, 500000.0}) {
        for (bool inverse : {false, true}) {
          for (DType dtype : {DType::f32, DType::f64}) {
            for (Layout layout : {Layout::contiguous, Layout::transposed, Layout::strided}) {
              INFO("D " << D << " offset " << offset << " theta " << theta << " inverse " << inverse << " "
                        << hetu::to_string(dtype) << " " << hetu::test::to_string(layout));
              const Shape shape{2, 5, 3, D};
              const Tensor x = hetu::test::random_tensor(shape, dtype, ++seed);
              const Tensor out = hetu::ops::rotary(hetu::test::with_layout(x, layout), offset,
                                                   hetu::ops::rotary_frequencies(D, theta), inverse);
              REQUIRE(out.shape() == shape);
              REQUIRE(out.dtype() == dtype);
              const std::vector<double> expected =
                  naive_rotary(hetu::to_vector(x), shape, offset, theta_frequencies(D, theta), inverse);
              CHECK(hetu::test::max_abs_diff(out, expected) <= hetu::test::tolerance(dtype));
            }
          }
        }
      }
    }
  }
}

TEST_CASE("rotary inverse undoes the forward rotation", "[rotary]") {
  for (DType dtype : {DType::f32, DType::f64}) {
    INFO(hetu::to_string(dtype));
    const Tensor x = hetu::test::random_tensor({2, 9, 4, 16}, dtype, 7);
    const std::vector<double> f = hetu::ops::rotary_frequencies(16, 10000.0);
    const Tensor back = hetu::ops::rotary(hetu::ops::rotary(x, 3, f), 3, f, /*inverse=*/true);
    CHECK(hetu::test::max_abs_diff(back, hetu::to_vector(x)) <= hetu::test::tolerance(dtype));
  }
}

TEST_CASE("rotary with offset p equals rows p.. of a longer sequence", "[rotary]") {
  for (DType dtype : {DType::f32, DType::f64}) {
    for (int64_t p : {1, 5, 11}) {
      INFO(hetu::to_string(dtype) << " p " << p);
      const Tensor x = hetu::test::random_tensor({2, 16, 3, 8}, dtype, 8);
      const std::vector<double> f = hetu::ops::rotary_frequencies(8, 10000.0);
      const Tensor whole = hetu::ops::rotary(x, 0, f);
      const Tensor tail = hetu::ops::rotary(x.narrow(1, p, 16 - p), p, f);
      CHECK(hetu::test::max_abs_diff(tail, hetu::to_vector(whole.narrow(1, p, 16 - p))) <=
            hetu::test::tolerance(dtype));
    }
  }
}

TEST_CASE("rotary with positions turns each row by its own position", "[rotary]") {
  for (DType dtype : {DType::f32, DType::f64}) {
    for (bool inverse : {false, true}) {
      INFO(hetu::to_string(dtype) << " inverse " << inverse);
      const Shape shape = {2, 6, 3, 8};
      const Tensor x = hetu::test::random_tensor(shape, dtype, 21);
      const std::vector<double> f = hetu::ops::rotary_frequencies(8, 10000.0);
      // Documents of 2, 4 | 1, 3, 2 tokens over the two rows of 6.
      const std::vector<int64_t> positions = hetu::ops::segment_positions(std::vector<int64_t>{0, 2, 6, 7, 10, 12});
      REQUIRE(positions == std::vector<int64_t>{0, 1, 0, 1, 2, 3, 0, 0, 1, 2, 0, 1});
      const Tensor out = hetu::ops::rotary(x, positions, f, inverse);
      // Each token against the naive loop on that token alone at offset = its position.
      const std::vector<double> xs = hetu::to_vector(x);
      std::vector<double> expected;
      for (int64_t row = 0; row < 12; ++row) {
        const std::vector<double> one(xs.begin() + row * 24, xs.begin() + (row + 1) * 24);
        const std::vector<double> turned = naive_rotary(one, {1, 1, 3, 8}, positions[static_cast<size_t>(row)], f, inverse);
        expected.insert(expected.end(), turned.begin(), turned.end());
      }
      CHECK(hetu::test::max_abs_diff(out, expected) <= hetu::test::tolerance(dtype));
    }
  }
  CHECK_THROWS_WITH(hetu::ops::rotary(hetu::zeros({1, 2, 3, 4}), std::vector<int64_t>{0, 1, 2}, std::vector<double>{1.0, 0.01}),
                    "rotary: 3 positions for x of shape (1, 2, 3, 4) (expected B·T = 2)");
}

TEST_CASE("rotary rejects bad arguments with specific messages", "[rotary]") {
  using hetu::ops::rotary;
  const std::vector<double> f2 = {1.0, 0.01};
  CHECK_THROWS_WITH(rotary(hetu::zeros({1, 2, 3, 5}), 0, f2), "rotary: head dim D must be even, got 5");
  CHECK_THROWS_WITH(rotary(hetu::zeros({2, 3, 4}), 0, f2), "rotary: x must be (B, T, H, D), got shape (2, 3, 4)");
  CHECK_THROWS_WITH(rotary(hetu::zeros({1, 2, 3, 4}), -1, f2), "rotary: position_offset must be >= 0, got -1");
  CHECK_THROWS_WITH(rotary(hetu::zeros({1, 2, 3, 6}), 0, f2), "rotary: 2 frequencies for head dim 6 (expected 3)");
  CHECK_THROWS_WITH(rotary(hetu::zeros({1, 2, 3, 4}), 0, std::vector<double>{1.0, INFINITY}),
                    "rotary: the frequencies must be finite, got inf");
  CHECK_THROWS_WITH(hetu::ops::rotary_frequencies(4, 0.0),
                    "rotary_frequencies: theta must be positive and finite, got 0");
  CHECK_THROWS_WITH(rotary(hetu::zeros({1, 2, 3, 4}, DType::i64), 0, f2),
                    Catch::StartsWith("op rotary not implemented"));
}
