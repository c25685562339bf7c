// Tests for lib/core/rng: Philox known answers, values pinned against an independent Python
// reference, box fills equal to the same box cut from the whole tensor, offsets, moments.
// Note [Python reference]: the pinned numbers come from a ~40-line Python script written from
// Salmon et al. SC'11 (Philox rounds: hi/lo of 0xD2511F53*x0 and 0xCD9E8D57*x2, out =
// (hi1^x1^k0, lo1, hi0^x3^k1, lo0), key += (0x9E3779B9, 0xBB67AE85) between rounds), FNV-1a 64
// (offset 0xcbf29ce484222325, prime 0x100000001b3), uniform = (o0 >> 8) * 2**-24 and
// normal = sqrt(-2 log((o0 + 1) * 2**-32)) * cos(2.0 * math.pi * (o1 * 2**-32)), fills cast
// with struct.pack('<f') to float32. None of these numbers came from this C++ code.
#include "lib/core/rng.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "lib/util/error.h"

using hetu::CounterRng;

namespace {
constexpr uint64_t kSeed = 0x123456789abcdef0ull;
constexpr const char* kStream = "transformer.h.0.attn.c_attn.weight";
}  // namespace

// Vectors from Random123's kat_vectors; the Python reference reproduces all three.
TEST_CASE("philox4x32_10 known-answer vectors", "[rng]") {
  using A4 = std::array<uint32_t, 4>;
  CHECK(hetu::philox4x32_10({0, 0, 0, 0}, {0, 0}) ==
        A4{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  CHECK(hetu::philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                            {0xffffffff, 0xffffffff}) ==
        A4{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  CHECK(hetu::philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                            {0xa4093822, 0x299f31d0}) ==
        A4{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
}

// "", "a", "foobar" are the published FNV-1a 64 test vectors; the last is from the script.
TEST_CASE("stream_id is FNV-1a 64", "[rng]") {
  CHECK(hetu::stream_id("") == 0xcbf29ce484222325ull);
  CHECK(hetu::stream_id("a") == 0xaf63dc4c8601ec8cull);
  CHECK(hetu::stream_id("foobar") == 0x85944171f73967e8ull);
  CHECK(hetu::stream_id(kStream) == 0x4181ecc696aeb24aull);
}

// See Note [Python reference]. Index 2^32 + 5 exercises the counter's high word.
TEST_CASE("bits, uniform and normal match the Python reference", "[rng]") {
  CounterRng rng(kSeed, kStream);
  using A4 = std::array<uint32_t, 4>;
  CHECK(rng.bits(0) == A4{0xabe7be60, 0xc3553349, 0xe7fbf367, 0x85732a67});
  CHECK(rng.bits((int64_t{1} << 32) + 5) == A4{0xea592de6, 0x9dd329e1, 0xfce430a3, 0x003e487c});
  struct Pin { int64_t i; double u, z; };
  const Pin pins[] = {{0, 0.6715048551559448, 0.07292067636688725},
                      {1, 0.24233520030975342, -1.4685322263931175},
                      {7, 0.14043116569519043, -1.0275578668017895},
                      {12345, 0.11449027061462402, 0.341789205058552},
                      {(int64_t{1} << 32) + 5, 0.9154232144355774, -0.3127077315691502}};
  for (const Pin& p : pins) {
    INFO("index " << p.i);
    CHECK(static_cast<double>(rng.uniform(p.i)) == p.u);  // exact: 24-bit fraction
    CHECK(rng.normal(p.i) == Approx(p.z).margin(1e-12));
  }
  CounterRng other(7, "wte");
  CHECK(static_cast<double>(other.uniform(3)) == 0.3104478716850281);
  CHECK(other.normal(3) == Approx(-1.3110452235854233).margin(1e-12));

  float f = 0;
  rng.fill_uniform(&f, 7, 1, -2.0f, 3.0f);
  CHECK(f == -1.2978441715240479f);
  rng.fill_normal(&f, 7, 1, 1.0f, 0.5f);
  CHECK(f == 0.4862210750579834f);
  double d = 0;
  rng.fill_normal(&d, 7, 1, 0.0, 1.0);
  CHECK(d == rng.normal(7));
}

TEST_CASE("fill with first_index equals the tail of a fill from zero", "[rng]") {
  CounterRng rng(kSeed, kStream);
  const int64_t n = 257;
  std::vector<float> whole(n + 100), tail(n);
  rng.fill_normal(whole.data(), 0, n + 100, 0.5f, 2.0f);
  rng.fill_normal(tail.data(), 100, n, 0.5f, 2.0f);
  CHECK(std::vector<float>(whole.begin() + 100, whole.end()) == tail);
  std::vector<double> whole_d(n + 100), tail_d(n);
  rng.fill_uniform(whole_d.data(), 0, n + 100, -1.0, 1.0);
  rng.fill_uniform(tail_d.data(), 100, n, -1.0, 1.0);
  CHECK(std::vector<double>(whole_d.begin() + 100, whole_d.end()) == tail_d);
}

namespace {
// Cuts box (offset, size) out of a row-major tensor of the given shape, by brute force.
std::vector<float> cut_box(const std::vector<float>& whole, const std::vector<int64_t>& shape,
                           const std::vector<int64_t>& offset, const std::vector<int64_t>& size) {
  std::vector<float> box;
  const size_t rank = shape.size();
  std::vector<int64_t> c(rank, 0);
  int64_t numel = 1;
  for (int64_t s : size) numel *= s;
  for (int64_t k = 0; k < numel; ++k) {
    int64_t rest = k, index = 0, stride = 1;
    for (size_t d = rank; d-- > 0;) {
      c[d] = rest % size[d];
      rest /= size[d];
    }
    for (size_t d = rank; d-- > 0;) {
      index += (offset[d] + c[d]) * stride;
      stride *= shape[d];
    }
    box.push_back(whole[index]);
  }
  return box;
}

void check_box(const std::vector<int64_t>& shape, const std::vector<int64_t>& offset,
               const std::vector<int64_t>& size) {
  CounterRng rng(kSeed, kStream);
  int64_t numel = 1, box_numel = 1;
  for (int64_t s : shape) numel *= s;
  for (int64_t s : size) box_numel *= s;
  std::vector<float> whole(numel), box(box_numel);
  rng.fill_normal(whole.data(), 0, numel, 0.0f, 0.02f);
  rng.fill_normal_box(box.data(), shape, offset, size, 0.0f, 0.02f);
  CHECK(box == cut_box(whole, shape, offset, size));
  rng.fill_uniform(whole.data(), 0, numel, -0.1f, 0.1f);
  rng.fill_uniform_box(box.data(), shape, offset, size, -0.1f, 0.1f);
  CHECK(box == cut_box(whole, shape, offset, size));
}
}  // namespace

TEST_CASE("a box generated alone equals the same box of the whole tensor", "[rng]") {
  check_box({7, 33}, {0, 0}, {7, 33});    // the whole tensor
  check_box({7, 33}, {0, 0}, {3, 5});     // top-left corner
  check_box({7, 33}, {4, 28}, {3, 5});    // bottom-right corner
  check_box({7, 33}, {2, 0}, {1, 33});    // one full row
  check_box({7, 33}, {0, 32}, {7, 1});    // last column
  check_box({7, 33}, {0, 17}, {7, 16});   // column shard (tp=2 on dim 1, uneven)
  check_box({5, 7, 33}, {1, 2, 3}, {3, 4, 29});
  check_box({5, 7, 33}, {4, 6, 32}, {1, 1, 1});  // last element
  check_box({5, 7, 33}, {0, 3, 0}, {5, 4, 33});
  check_box({3, 5, 7, 9}, {1, 0, 2, 4}, {2, 5, 3, 5});
  check_box({11}, {3}, {8});              // 1-D
  check_box({7, 33}, {3, 4}, {0, 5});     // empty box
}

TEST_CASE("the header's sharding example holds", "[rng]") {
  CounterRng rng(kSeed, kStream);
  const int64_t shape[] = {4, 6}, off[] = {0, 3}, size[] = {4, 3};
  float local[12];
  rng.fill_normal_box(local, shape, off, size, 0.0f, 0.02f);
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 3; ++c)
      CHECK(local[r * 3 + c] == static_cast<float>(double{0.02f} * rng.normal(r * 6 + 3 + c)));
}

TEST_CASE("box fills reject bad boxes", "[rng]") {
  CounterRng rng(1, "w");
  float out[64];
  const int64_t shape[] = {4, 6};
  const int64_t off_ok[] = {0, 0}, size_ok[] = {4, 6};
  const int64_t off_bad[] = {1, 0}, size_big[] = {4, 7}, neg[] = {-1, 0}, rank1[] = {4};
  CHECK_NOTHROW(rng.fill_normal_box(out, shape, off_ok, size_ok, 0, 1));
  CHECK_THROWS_AS(rng.fill_normal_box(out, shape, off_bad, size_ok, 0, 1), hetu::Error);
  CHECK_THROWS_AS(rng.fill_normal_box(out, shape, off_ok, size_big, 0, 1), hetu::Error);
  CHECK_THROWS_AS(rng.fill_uniform_box(out, shape, neg, size_ok, 0, 1), hetu::Error);
  CHECK_THROWS_AS(rng.fill_uniform_box(out, shape, rank1, size_ok, 0, 1), hetu::Error);
  CHECK_THROWS_AS(rng.fill_normal(out, -1, 4, 0, 1), hetu::Error);
  CHECK_THROWS_AS(rng.fill_uniform(out, 0, -4, 0, 1), hetu::Error);
}

TEST_CASE("different streams and seeds give different numbers", "[rng]") {
  const int64_t n = 64;
  std::vector<float> a(n), b(n), c(n), a2(n);
  CounterRng(kSeed, "h.0.weight").fill_normal(a.data(), 0, n, 0, 1);
  CounterRng(kSeed, "h.1.weight").fill_normal(b.data(), 0, n, 0, 1);
  CounterRng(kSeed + (uint64_t{1} << 32), "h.0.weight").fill_normal(c.data(), 0, n, 0, 1);
  CounterRng(kSeed, "h.0.weight").fill_normal(a2.data(), 0, n, 0, 1);
  CHECK(a == a2);  // same seed and stream: same numbers
  int64_t same_ab = 0, same_ac = 0;
  for (int64_t k = 0; k < n; ++k) {
    same_ab += a[k] == b[k];
    same_ac += a[k] == c[k];
  }
  CHECK(same_ab == 0);
  CHECK(same_ac == 0);
}

TEST_CASE("moments of one million samples", "[rng]") {
  CounterRng rng(kSeed, kStream);
  const int64_t n = 1'000'000;
  std::vector<double> x(n);
  rng.fill_normal(x.data(), 0, n, 0.0, 1.0);
  double sum = 0, sum_sq = 0;
  for (double v : x) sum += v;
  const double mean = sum / n;
  for (double v : x) sum_sq += (v - mean) * (v - mean);
  CHECK(std::abs(mean) < 0.01);
  CHECK(std::abs(sum_sq / (n - 1) - 1.0) < 0.01);

  rng.fill_uniform(x.data(), 0, n, 0.0, 1.0);
  double u_sum = 0, u_min = 1, u_max = 0;
  for (double v : x) {
    u_sum += v;
    u_min = std::min(u_min, v);
    u_max = std::max(u_max, v);
  }
  CHECK(std::abs(u_sum / n - 0.5) < 0.002);
  CHECK(u_min >= 0.0);
  CHECK(u_max < 1.0);
}
