// Public rotary position embedding (ops.h): argument checks, output shape, kernel dispatch.
// x (B, T, H, D) with D even -> out of the same shape; the backward is rotary(grad, ..., !inverse).
// The kernel (lib/ops/cpu/rotary.cpp) takes contiguous buffers, so x is made contiguous here.
#include "lib/ops/cpu/rotary.h"
#include "lib/ops/cuda/rotary.h"

#include <cmath>

#include "lib/ops/op_checks.h"
#include "lib/ops/ops.h"

namespace hetu::ops {

Tensor rotary(const Tensor& x, int64_t position_offset, double theta, bool inverse) {
  check_inputs("rotary", {&x}, Backends::cpu_and_cuda);
  check_float_dtype("rotary", {&x});
  HT_CHECK(x.dim() == 4, "rotary: x must be (B, T, H, D), got shape {}", shape_str(x.shape()));
  HT_CHECK(x.size(3) % 2 == 0, "rotary: head dim D must be even, got {}", x.size(3));
  HT_CHECK(position_offset >= 0, "rotary: position_offset must be >= 0, got {}", position_offset);
  HT_CHECK(std::isfinite(theta) && theta > 0, "rotary: theta must be positive and finite, got {}", theta);
  const cpu::RotaryDims dims{x.size(0), x.size(1), x.size(2), x.size(3)};
  const Tensor xc = x.contiguous();
  Tensor out = empty(x.shape(), x.dtype(), x.device());
  if constexpr (hetu::cuda::kBuilt) {
    if (x.device().is_cuda()) {
      hetu::cuda::DeviceGuard guard(x.device());
      cuda::rotary(x.dtype(), out.raw_data(), xc.raw_data(), dims.B, dims.T, dims.H, dims.D, position_offset, theta,
                   inverse);
      return out;
    }
  }
  HT_DISPATCH_FLOAT(x.dtype(), "rotary", x.device(), [&] {
    cpu::rotary<scalar_t>(out.data<scalar_t>(), xc.data<scalar_t>(), dims, position_offset, theta, inverse);
  });
  return out;
}

}  // namespace hetu::ops
