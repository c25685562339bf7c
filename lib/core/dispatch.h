// Dtype dispatch for kernels: run a generic lambda with `scalar_t` bound to the C++
// storage type of a runtime dtype, or fail with "op X not implemented for device Y / dtype Z".
//
//   HT_DISPATCH_FLOAT(x.dtype(), "gelu", x.device(), [&] { gelu_kernel<scalar_t>(...); });
// The lambda is a macro argument, so it cannot hold #pragma omp: put parallel loops in a
// templated kernel function and call it from the lambda, as above.
#pragma once

#include "lib/core/device.h"
#include "lib/core/dtype.h"
#include "lib/util/error.h"

namespace hetu {

[[noreturn]] inline void op_not_implemented(std::string_view op, Device device, DType dtype) {
  HT_THROW("op {} not implemented for device {} / dtype {}", op, device.str(), to_string(dtype));
}

}  // namespace hetu

#define HT_DISPATCH_CASE(DTYPE, ...)                                   \
  case DTYPE: {                                                         \
    using scalar_t = typename ::hetu::DTypeStorage<DTYPE>::type;        \
    return __VA_ARGS__();                                               \
  }

// f32 and f64: the CPU compute types.
#define HT_DISPATCH_FLOAT(DTYPE, OP, DEVICE, ...)                             \
  [&] {                                                                       \
    switch (DTYPE) {                                                          \
      HT_DISPATCH_CASE(::hetu::DType::f32, __VA_ARGS__)                       \
      HT_DISPATCH_CASE(::hetu::DType::f64, __VA_ARGS__)                       \
      default: ::hetu::op_not_implemented(OP, DEVICE, DTYPE);                 \
    }                                                                         \
  }()

// Integer index types.
#define HT_DISPATCH_INDEX(DTYPE, OP, DEVICE, ...)                             \
  [&] {                                                                       \
    switch (DTYPE) {                                                          \
      HT_DISPATCH_CASE(::hetu::DType::i32, __VA_ARGS__)                       \
      HT_DISPATCH_CASE(::hetu::DType::i64, __VA_ARGS__)                       \
      default: ::hetu::op_not_implemented(OP, DEVICE, DTYPE);                 \
    }                                                                         \
  }()

// Every dtype (copies, casts, fills).
#define HT_DISPATCH_ALL(DTYPE, ...)                                           \
  [&] {                                                                       \
    switch (DTYPE) {                                                          \
      HT_DISPATCH_CASE(::hetu::DType::f32, __VA_ARGS__)                       \
      HT_DISPATCH_CASE(::hetu::DType::f64, __VA_ARGS__)                       \
      HT_DISPATCH_CASE(::hetu::DType::bf16, __VA_ARGS__)                      \
      HT_DISPATCH_CASE(::hetu::DType::f16, __VA_ARGS__)                       \
      HT_DISPATCH_CASE(::hetu::DType::i32, __VA_ARGS__)                       \
      HT_DISPATCH_CASE(::hetu::DType::i64, __VA_ARGS__)                       \
      HT_DISPATCH_CASE(::hetu::DType::u8, __VA_ARGS__)                        \
    }                                                                         \
    HT_THROW("unknown dtype");                                                \
  }()
