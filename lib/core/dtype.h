// Element types. f32/f64 compute on CPU; bf16/f16 are storage types converted to f32 for
// compute (round-to-nearest-even on the way back); i32/i64/u8 hold indices, tokens, masks.
//
//   dtype_size(DType::bf16) == 2;  float_to_bf16(1.0f) == 0x3F80;  bf16_to_float(0x3F80) == 1.0f
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace hetu {

enum class DType : uint8_t { f32, f64, bf16, f16, i32, i64, u8 };

size_t dtype_size(DType dtype);
std::string_view to_string(DType dtype);
bool is_floating(DType dtype);

inline float bf16_to_float(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float out;
  std::memcpy(&out, &wide, sizeof(out));
  return out;
}

inline uint16_t float_to_bf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7F800000u) == 0x7F800000u && (bits & 0x007FFFFFu) != 0) {
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);  // quiet NaN stays NaN
  }
  const uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);  // round to nearest, ties to even
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float f16_to_float(uint16_t bits);
uint16_t float_to_f16(float value);

// Storage types for the 16-bit floats: plain bits, converted explicitly.
struct bfloat16 {
  uint16_t bits;
};
struct float16 {
  uint16_t bits;
};

// The C++ type that stores one element of a dtype.
template <DType D> struct DTypeStorage;
template <> struct DTypeStorage<DType::f32> { using type = float; };
template <> struct DTypeStorage<DType::f64> { using type = double; };
template <> struct DTypeStorage<DType::bf16> { using type = bfloat16; };
template <> struct DTypeStorage<DType::f16> { using type = float16; };
template <> struct DTypeStorage<DType::i32> { using type = int32_t; };
template <> struct DTypeStorage<DType::i64> { using type = int64_t; };
template <> struct DTypeStorage<DType::u8> { using type = uint8_t; };

// The dtype whose storage is T, for the unambiguous C++ types.
template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<double>() { return DType::f64; }
template <> constexpr DType dtype_of<int32_t>() { return DType::i32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::i64; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::u8; }
template <> constexpr DType dtype_of<bfloat16>() { return DType::bf16; }
template <> constexpr DType dtype_of<float16>() { return DType::f16; }

// Element conversions through double, the common path of casts.
template <typename T> inline double to_double(T value) { return static_cast<double>(value); }
template <> inline double to_double(bfloat16 value) { return bf16_to_float(value.bits); }
template <> inline double to_double(float16 value) { return f16_to_float(value.bits); }
template <typename T> inline T from_double(double value) { return static_cast<T>(value); }
// Note [Rounding f64 to 16 bits]: rounding f64 -> f32 -> bf16 with round-to-nearest twice
// can land on the wrong side of a tie (1 + 2^-8 + 2^-30 becomes the tie 1 + 2^-8 in f32).
// The f32 step therefore rounds to odd (truncate, then set the last bit if anything was
// lost), which makes the second rounding exact: the result equals one direct rounding.
inline float round_to_odd_float(double value) {
  float f = static_cast<float>(value);
  if (static_cast<double>(f) == value || f != f) return f;  // exact or NaN
  if (std::fabs(static_cast<double>(f)) > std::fabs(value)) f = std::nextafter(f, 0.0f);  // truncate
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  if ((bits & 0x7F800000u) == 0x7F800000u) return f;  // truncation never reaches inf; keep guards simple
  bits |= 1u;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}
template <> inline bfloat16 from_double(double value) { return {float_to_bf16(round_to_odd_float(value))}; }
template <> inline float16 from_double(double value) { return {float_to_f16(round_to_odd_float(value))}; }

}  // namespace hetu
