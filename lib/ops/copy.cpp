// Copy, cast and fill for every dtype (bf16/f16 round to nearest even; conversions are those
// of lib/core/dtype.h). copy_ and fill_ write through dst's strides, so they fill views in
// place; cast returns x itself when the dtype already matches (as Tensor::to).
//   copy_(x.narrow(0, 0, 2), row)  // row (C) broadcast into the first two rows of x (N, C)
//   cast(x, DType::bf16)           // a new bf16 tensor of x's shape
#include <cmath>
#include <limits>

#include "lib/core/cuda_runtime.h"
#include "lib/core/strided_loop.h"
#include "lib/ops/op_checks.h"
#include "lib/ops/ops.h"

namespace hetu::ops {
namespace {

// A dim of size > 1 with stride 0 maps many elements to one memory location.
void check_writable(const char* op, const Tensor& dst) {
  for (size_t d = 0; d < dst.shape().size(); ++d) {
    HT_CHECK(dst.strides()[d] != 0 || dst.shape()[d] <= 1,
             "{}: dst dim {} is a broadcast (stride 0) of size {}; its elements share one location", op, d,
             dst.shape()[d]);
  }
}

template <typename T> bool representable(double value) {
  if constexpr (std::is_integral_v<T>) {
    // The bounds are powers of two (or 255), exact in double.
    const double low = static_cast<double>(std::numeric_limits<T>::min());
    const double high_exclusive = std::is_same_v<T, int64_t> ? 9223372036854775808.0
                                                             : static_cast<double>(std::numeric_limits<T>::max()) + 1;
    return std::isfinite(value) && std::trunc(value) >= low && value < high_exclusive;  // casts truncate
  } else {
    return true;  // floats take inf and NaN; finite values out of range become inf
  }
}

}  // namespace

void copy_(const Tensor& dst, const Tensor& src_in) {
  check_inputs("copy_", {&dst}, Backends::cpu_and_cuda);  // src may be on another device
  check_inputs("copy_", {&src_in}, Backends::cpu_and_cuda);
  const Shape& ds = dst.shape();
  const Shape& ss = src_in.shape();
  bool broadcasts = ss.size() <= ds.size();
  for (size_t i = 0; broadcasts && i < ss.size(); ++i) {
    const int64_t s = ss[ss.size() - 1 - i];
    broadcasts = s == 1 || s == ds[ds.size() - 1 - i];
  }
  HT_CHECK(broadcasts, "copy_: src shape {} does not broadcast to dst shape {}", shape_str(ss), shape_str(ds));
  check_writable("copy_", dst);
  // A src that shares dst's storage through another view could be overwritten while it is read.
  const bool same_view = src_in.storage() == dst.storage() && ss == ds && src_in.strides() == dst.strides() &&
                         src_in.offset() == dst.offset() && src_in.dtype() == dst.dtype();
  if (same_view) return;
  const Tensor src = src_in.storage() == dst.storage() ? src_in.clone() : src_in;
  dst.copy_from(src);
}

Tensor cast(const Tensor& x, DType dtype) {
  check_inputs("cast", {&x}, Backends::cpu_and_cuda);
  return x.to(dtype);
}

void fill_(const Tensor& x, double value) {
  check_inputs("fill_", {&x}, Backends::cpu_and_cuda);
  HT_DISPATCH_ALL(x.dtype(), [&] {
    HT_CHECK(representable<scalar_t>(value), "fill_: value {} is not representable in {}", value,
             to_string(x.dtype()));
    if (x.device().is_cuda()) return cuda::fill_tensor(x, value);
    const scalar_t v = from_double<scalar_t>(value);
    scalar_t* base = static_cast<scalar_t*>(x.storage()->data());
    for_each_row<1>(x.shape(), {x.strides()}, {x.offset()}, [&](auto off, int64_t n, auto step) {
      for (int64_t i = 0; i < n; ++i) base[off[0] + i * step[0]] = v;
    });
  });
}

}  // namespace hetu::ops
