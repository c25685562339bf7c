// copy_, cast and fill_ against naive loops: every dst/src layout pair, broadcasting, casting,
// views written in place, and the 16-bit float conversions of lib/core/dtype.cpp pinned bit for
// bit against NumPy. See Note [Pinned 16-bit values].
//
// Note [Pinned 16-bit values]: the tables below were printed by /usr/bin/python3 (NumPy 1.24.2):
//   f16:  h = np.array([x], np.float32).astype(np.float16); bits h.view(np.uint16),
//         back h.astype(np.float32).view(np.uint32)
//   bf16: b = x.view(np.uint32); NaN -> (b >> 16) | 0x40; else hi = b >> 16, rem = b & 0xFFFF,
//         hi += rem > 0x8000 or (rem == 0x8000 and hi & 1); back = hi << 16
// (the bf16 rule is round to nearest, ties to even; torch 1.13's .to(torch.bfloat16) agrees on
// every row but NaN, where it gives 0xFFFF). None of these numbers came from this C++ code.
#include <cmath>
#include <cstring>

#include "lib/ops/ops.h"
#include "tests/ops/op_test_utils.h"

using namespace hetu;
using namespace hetu::test;

namespace {

constexpr Layout kLayouts[] = {Layout::contiguous, Layout::transposed, Layout::strided};

struct Pinned {
  const char* name;
  uint32_t f32_bits;    // input
  uint16_t half_bits;   // after the cast to the 16-bit type
  uint32_t back_bits;   // after casting back to f32
};

// clang-format off
const std::vector<Pinned> kF16 = {
      {"one", 0x3F800000u, 0x3C00u, 0x3F800000u},  // 1.0
      {"minus 2.5", 0xC0200000u, 0xC100u, 0xC0200000u},  // -2.5
      {"max half 65504", 0x477FE000u, 0x7BFFu, 0x477FE000u},  // 65504.0
      {"65519 -> 65504", 0x477FEF00u, 0x7BFFu, 0x477FE000u},  // 65519.0
      {"65520 tie -> inf", 0x477FF000u, 0x7C00u, 0x7F800000u},  // 65520.0
      {"1e5 -> inf", 0x47C35000u, 0x7C00u, 0x7F800000u},  // 100000.0
      {"-1e5 -> -inf", 0xC7C35000u, 0xFC00u, 0xFF800000u},  // -100000.0
      {"1+2^-11 tie -> even 1", 0x3F801000u, 0x3C00u, 0x3F800000u},  // 1.0004883
      {"1+3*2^-11 tie -> even 1+2^-9", 0x3F803000u, 0x3C02u, 0x3F804000u},  // 1.0014648
      {"1+2^-11+2^-20 -> up", 0x3F801008u, 0x3C01u, 0x3F802000u},  // 1.0004892
      {"pi", 0x40490FDBu, 0x4248u, 0x40490000u},  // 3.1415927
      {"0.1", 0x3DCCCCCDu, 0x2E66u, 0x3DCCC000u},  // 0.1
      {"min subnormal 2^-24", 0x33800000u, 0x0001u, 0x33800000u},  // 5.9604645e-08
      {"2^-25 tie -> 0", 0x33000000u, 0x0000u, 0x00000000u},  // 2.9802322e-08
      {"2^-25 + ulp -> 2^-24", 0x33000001u, 0x0001u, 0x33800000u},  // 2.9802326e-08
      {"3*2^-25 tie -> 2^-23", 0x33C00000u, 0x0002u, 0x34000000u},  // 8.940697e-08
      {"5*2^-25 tie -> 2^-23", 0x34200000u, 0x0002u, 0x34000000u},  // 1.4901161e-07
      {"subnormal 1e-6", 0x358637BDu, 0x0011u, 0x35880000u},  // 1e-06
      {"largest subnormal 1023*2^-24", 0x387FC000u, 0x03FFu, 0x387FC000u},  // 6.097555e-05
      {"2^-14 - 2^-25 tie -> 2^-14", 0x387FE000u, 0x0400u, 0x38800000u},  // 6.1005354e-05
      {"min normal 2^-14", 0x38800000u, 0x0400u, 0x38800000u},  // 6.1035156e-05
      {"1e-8 -> 0", 0x322BCC77u, 0x0000u, 0x00000000u},  // 1e-08
      {"-1e-8 -> -0", 0xB22BCC77u, 0x8000u, 0x80000000u},  // -1e-08
      {"-0", 0x80000000u, 0x8000u, 0x80000000u},  // -0.0
      {"f32 subnormal 1e-40 -> 0", 0x000116C2u, 0x0000u, 0x00000000u},  // 1e-40
      {"inf", 0x7F800000u, 0x7C00u, 0x7F800000u},  // inf
      {"-inf", 0xFF800000u, 0xFC00u, 0xFF800000u},  // -inf
      {"NaN", 0x7FC00000u, 0x7E00u, 0x7FC00000u},  // nan
};

const std::vector<Pinned> kBF16 = {
      {"one", 0x3F800000u, 0x3F80u, 0x3F800000u},  // 1.0
      {"minus 2.5", 0xC0200000u, 0xC020u, 0xC0200000u},  // -2.5
      {"pi", 0x40490FDBu, 0x4049u, 0x40490000u},  // 3.1415927
      {"0.1", 0x3DCCCCCDu, 0x3DCDu, 0x3DCD0000u},  // 0.1
      {"1+2^-8 tie -> even 1", 0x3F808000u, 0x3F80u, 0x3F800000u},  // 1.0039062
      {"1+3*2^-8 tie -> even 1+2^-6", 0x3F818000u, 0x3F82u, 0x3F820000u},  // 1.0117188
      {"1+2^-8+2^-20 -> up", 0x3F808008u, 0x3F81u, 0x3F810000u},  // 1.0039072
      {"max bf16", 0x7F7F0000u, 0x7F7Fu, 0x7F7F0000u},  // 3.3895314e+38
      {"f32 max -> inf", 0x7F7FFFFFu, 0x7F80u, 0x7F800000u},  // 3.4028235e+38
      {"tie above max bf16 -> inf", 0x7F7F8000u, 0x7F80u, 0x7F800000u},  // 3.3961775e+38
      {"just below that tie", 0x7F7F7FFFu, 0x7F7Fu, 0x7F7F0000u},  // 3.3961773e+38
      {"-f32 max -> -inf", 0xFF7FFFFFu, 0xFF80u, 0xFF800000u},  // -3.4028235e+38
      {"f32 subnormal 1e-40", 0x000116C2u, 0x0001u, 0x00010000u},  // 1e-40
      {"min f32 subnormal -> 0", 0x00000001u, 0x0000u, 0x00000000u},  // 1e-45
      {"subnormal tie -> even 0", 0x00008000u, 0x0000u, 0x00000000u},  // 4.5918e-41
      {"subnormal tie -> even 2", 0x00018000u, 0x0002u, 0x00020000u},  // 1.37753e-40
      {"subnormal -> 1 (rounds up)", 0x00008001u, 0x0001u, 0x00010000u},  // 4.5919e-41
      {"min f32 normal", 0x00800000u, 0x0080u, 0x00800000u},  // 1.1754944e-38
      {"-0", 0x80000000u, 0x8000u, 0x80000000u},  // -0.0
      {"inf", 0x7F800000u, 0x7F80u, 0x7F800000u},  // inf
      {"-inf", 0xFF800000u, 0xFF80u, 0xFF800000u},  // -inf
      {"NaN", 0x7FC00000u, 0x7FC0u, 0x7FC00000u},  // nan
};
// clang-format on

float from_bits(uint32_t bits) {
  float out;
  std::memcpy(&out, &bits, sizeof(out));
  return out;
}
uint32_t to_bits(float value) {
  uint32_t out;
  std::memcpy(&out, &value, sizeof(out));
  return out;
}

template <typename Half> void check_round_trip(const std::vector<Pinned>& table, DType half_dtype) {
  std::vector<float> inputs;
  for (const Pinned& p : table) inputs.push_back(from_bits(p.f32_bits));
  const Tensor x_contiguous = tensor_from(inputs, {static_cast<int64_t>(inputs.size())});
  for (Layout layout : {Layout::contiguous, Layout::strided}) {
    const Tensor x = with_layout(x_contiguous, layout);
    const Tensor half = ops::cast(x, half_dtype);
    const Tensor back = ops::cast(half, DType::f32);
    REQUIRE(half.dtype() == half_dtype);
    REQUIRE(back.dtype() == DType::f32);
    for (size_t i = 0; i < table.size(); ++i) {
      const Pinned& p = table[i];
      const uint16_t got_half = half.data<Half>()[i].bits;
      const float got_back = back.data<float>()[i];
      INFO(to_string(half_dtype) << " " << p.name << " " << to_string(layout) << " half 0x" << std::hex << got_half
                                 << " back 0x" << to_bits(got_back));
      if (std::isnan(from_bits(p.f32_bits))) {
        CHECK(std::isnan(got_back));
        CHECK(got_half == p.half_bits);  // the quiet NaN NumPy gives
      } else {
        CHECK(got_half == p.half_bits);
        CHECK(to_bits(got_back) == p.back_bits);
      }
    }
  }
}

}  // namespace

TEST_CASE("f32 -> f16 -> f32 round trips match NumPy bit for bit", "[copy]") {
  check_round_trip<float16>(kF16, DType::f16);
}

TEST_CASE("f32 -> bf16 -> f32 round trips match NumPy bit for bit", "[copy]") {
  check_round_trip<bfloat16>(kBF16, DType::bf16);
}

TEST_CASE("16-bit floats widen exactly to f64 and back", "[copy]") {
  for (DType half : {DType::f16, DType::bf16}) {
    const Tensor x = ops::cast(random_tensor({7, 33}, DType::f32, 11, -100.0, 100.0), half);
    const Tensor wide = ops::cast(x, DType::f64);
    CHECK(max_abs_diff(wide, to_vector(x)) == 0);
    const Tensor again = ops::cast(wide, half);
    CHECK(std::memcmp(again.raw_data(), x.raw_data(), static_cast<size_t>(x.numel()) * 2) == 0);
  }
}

// f64 -> f16 goes through f32 (dtype.h: from_double<float16>), so a value just above an f16
// tie can land exactly on the tie in f32 and then round to even: 1 + 2^-11 + 2^-30 becomes
// 0x3C00 where NumPy's single rounding gives 0x3C01 (torch 1.13 also gives 0x3C00). Marked
// See Note [Rounding f64 to 16 bits] in lib/core/dtype.h.
TEST_CASE("f64 -> f16 and f64 -> bf16 round once, as NumPy", "[copy]") {
  const Tensor x = tensor_from<double>({1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -30)}, {1});
  CHECK(ops::cast(x, DType::f16).data<float16>()[0].bits == 0x3C01u);
  const Tensor y = tensor_from<double>({1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30), -(1.0 + std::ldexp(1.0, -8))}, {2});
  const Tensor yb = ops::cast(y, DType::bf16);
  const bfloat16* b = yb.data<bfloat16>();
  CHECK(b[0].bits == 0x3F81u);  // above the tie: rounds up
  CHECK(b[1].bits == 0xBF80u);  // exactly the tie: rounds to even (down in magnitude)
}

TEST_CASE("copy_ copies between every pair of layouts, with casts", "[copy]") {
  uint64_t seed = 1;
  for (DType src_dtype : {DType::f32, DType::f64}) {
    for (DType dst_dtype : {DType::f32, DType::f64}) {
      for (const Shape& shape : {Shape{1}, Shape{7}, Shape{33, 7}, Shape{3, 5, 129}}) {
        for (Layout src_layout : kLayouts) {
          for (Layout dst_layout : kLayouts) {
            const Tensor src = with_layout(random_tensor(shape, src_dtype, seed++), src_layout);
            const Tensor dst = with_layout(zeros(shape, dst_dtype), dst_layout);
            std::vector<double> expected = to_vector(src);
            if (dst_dtype == DType::f32) {
              for (double& e : expected) e = static_cast<double>(static_cast<float>(e));
            }
            INFO(shape_str(shape) << " " << to_string(src_dtype) << " " << to_string(src_layout) << " -> "
                                  << to_string(dst_dtype) << " " << to_string(dst_layout));
            ops::copy_(dst, src);
            CHECK(max_abs_diff(dst, expected) == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("copy_ broadcasts src and writes only dst's elements", "[copy]") {
  const Tensor buffer = zeros({3, 8}, DType::f64);
  const Tensor dst = buffer.slice(1, 1, 8, 2);  // (3, 4): columns 1, 3, 5, 7
  ops::copy_(dst, tensor_from<float>({1, 2, 3, 4}, {4}));
  CHECK(max_abs_diff(buffer, {0, 1, 0, 2, 0, 3, 0, 4, 0, 1, 0, 2, 0, 3, 0, 4, 0, 1, 0, 2, 0, 3, 0, 4}) == 0);
  ops::copy_(dst, tensor_from<double>({-1, -2, -3}, {3, 1}));
  CHECK(max_abs_diff(dst, {-1, -1, -1, -1, -2, -2, -2, -2, -3, -3, -3, -3}) == 0);
  ops::copy_(dst, full({}, 5.0, DType::i64));
  CHECK(max_abs_diff(buffer.slice(1, 0, 8, 2), std::vector<double>(12, 0.0)) == 0);
  CHECK(max_abs_diff(dst, std::vector<double>(12, 5.0)) == 0);
}

TEST_CASE("copy_ between overlapping views of one buffer reads src before writing", "[copy]") {
  const Tensor x = tensor_from<double>({0, 1, 2, 3, 4, 5}, {6});
  ops::copy_(x.slice(0, 1, 6), x.slice(0, 0, 5));  // shift right by one
  CHECK(max_abs_diff(x, {0, 0, 1, 2, 3, 4}) == 0);
  ops::copy_(x, x);  // the same view: nothing to do
  CHECK(max_abs_diff(x, {0, 0, 1, 2, 3, 4}) == 0);
}

TEST_CASE("copy_ argument errors", "[copy]") {
  const Tensor dst = zeros({2, 4});
  CHECK_THROWS_WITH(ops::copy_(dst, zeros({3})),
                    Catch::StartsWith("copy_: src shape (3,) does not broadcast to dst shape (2, 4)"));
  CHECK_THROWS_WITH(ops::copy_(dst, zeros({1, 2, 4})),
                    Catch::StartsWith("copy_: src shape (1, 2, 4) does not broadcast to dst shape (2, 4)"));
  CHECK_THROWS_WITH(ops::copy_(zeros({1, 4}).expand({3, 4}), zeros({3, 4})),
                    Catch::StartsWith("copy_: dst dim 0 is a broadcast (stride 0) of size 3"));
  CHECK_THROWS_WITH(ops::copy_(dst, Tensor()), Catch::StartsWith("copy_: an input tensor is undefined"));
}

TEST_CASE("cast converts every layout and keeps the shape", "[copy]") {
  uint64_t seed = 500;
  for (Layout layout : kLayouts) {
    const Tensor x = with_layout(random_tensor({33, 7}, DType::f64, seed++, -50.0, 50.0), layout);
    const std::vector<double> vx = to_vector(x);
    std::vector<double> as_f32, as_i32;
    for (double v : vx) {
      as_f32.push_back(static_cast<double>(static_cast<float>(v)));
      as_i32.push_back(std::trunc(v));  // toward zero, as C++ and torch
    }
    INFO(to_string(layout));
    const Tensor f = ops::cast(x, DType::f32);
    CHECK(f.shape() == x.shape());
    CHECK(f.is_contiguous());
    CHECK(max_abs_diff(f, as_f32) == 0);
    CHECK(max_abs_diff(ops::cast(x, DType::i32), as_i32) == 0);
    CHECK(max_abs_diff(ops::cast(ops::cast(x, DType::i64), DType::f32), as_i32) == 0);
  }
  const Tensor x = zeros({2});
  CHECK(ops::cast(x, DType::f32).same(x));  // no copy when the dtype already matches, as Tensor::to
  CHECK_THROWS_WITH(ops::cast(Tensor(), DType::f32), Catch::StartsWith("cast: an input tensor is undefined"));
}

TEST_CASE("fill_ writes every element of a view, in every dtype", "[copy]") {
  for (DType dtype : {DType::f32, DType::f64, DType::bf16, DType::f16, DType::i32, DType::i64, DType::u8}) {
    for (Layout layout : kLayouts) {
      const Tensor buffer = zeros({7, 66}, dtype);
      const Tensor x = layout == Layout::contiguous  ? buffer
                       : layout == Layout::strided   ? buffer.slice(1, 0, 66, 2)
                                                     : buffer.narrow(1, 0, 7).transpose(0, 1);
      INFO(to_string(dtype) << " " << to_string(layout));
      ops::fill_(x, 3.0);
      CHECK(max_abs_diff(x, std::vector<double>(static_cast<size_t>(x.numel()), 3.0)) == 0);
      double sum = 0;
      for (double v : to_vector(buffer)) sum += v;
      CHECK(sum == 3.0 * static_cast<double>(x.numel()));  // nothing outside the view
    }
  }
  // Rounding on the way in, as a cast: 1 + 2^-8 + 2^-20 rounds up in bf16; 1e5 overflows f16.
  const Tensor b = zeros({3}, DType::bf16);
  ops::fill_(b, 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -20));
  CHECK(b.data<bfloat16>()[2].bits == 0x3F81u);
  const Tensor h = zeros({3}, DType::f16);
  ops::fill_(h, 1e5);
  CHECK(h.data<float16>()[1].bits == 0x7C00u);
  ops::fill_(h, NAN);
  CHECK(std::isnan(to_vector(h)[0]));
  const Tensor i = zeros({2}, DType::i32);
  ops::fill_(i, -2.7);
  CHECK(max_abs_diff(i, {-2, -2}) == 0);
  ops::fill_(zeros({1, 4}).expand({3, 4}), 1.0);  // broadcast views may be filled: one value
}

TEST_CASE("fill_ rejects values an integer dtype cannot hold", "[copy]") {
  CHECK_THROWS_WITH(ops::fill_(zeros({2}, DType::i32), 3e9), Catch::StartsWith("fill_: value 3") &&
                                                                  Catch::Contains("not representable in i32"));
  CHECK_THROWS_WITH(ops::fill_(zeros({2}, DType::u8), -1.0), Catch::Contains("not representable in u8"));
  CHECK_THROWS_WITH(ops::fill_(zeros({2}, DType::u8), 256.0), Catch::Contains("not representable in u8"));
  CHECK_THROWS_WITH(ops::fill_(zeros({2}, DType::i64), NAN), Catch::Contains("not representable in i64"));
  CHECK_THROWS_WITH(ops::fill_(zeros({2}, DType::i64), 9223372036854775808.0),
                    Catch::Contains("not representable in i64"));
  ops::fill_(zeros({2}, DType::i64), -9223372036854775808.0);  // -2^63 fits
  ops::fill_(zeros({2}, DType::u8), 255.0);
}
