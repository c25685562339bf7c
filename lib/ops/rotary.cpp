// Public rotary position embedding (ops.h): argument checks, output shape, kernel dispatch.
// x (B, T, H, D) with D even -> out of the same shape; the backward is rotary(grad, ..., !inverse).
// The kernels (lib/ops/cpu/rotary.cpp, lib/ops/cuda/rotary.cu) take contiguous buffers, so x
// is made contiguous here, and the D/2 frequencies the caller computed once.
#include "lib/ops/cpu/rotary.h"
#include "lib/ops/cuda/rotary.h"

#include <cmath>

#include "lib/ops/op_checks.h"
#include "lib/ops/ops.h"

namespace hetu::ops {

std::vector<double> rotary_frequencies(int64_t D, double theta) {
  HT_CHECK(D > 0 && D % 2 == 0, "rotary_frequencies: head dim D must be even and positive, got {}", D);
  HT_CHECK(std::isfinite(theta) && theta > 0, "rotary_frequencies: theta must be positive and finite, got {}", theta);
  std::vector<double> inv_freq(static_cast<size_t>(D / 2));
  for (int64_t i = 0; i < D / 2; ++i) {
    inv_freq[static_cast<size_t>(i)] = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(D));
  }
  return inv_freq;
}

Tensor rotary(const Tensor& x, int64_t position_offset, std::span<const double> inv_freq, bool inverse) {
  check_inputs("rotary", {&x}, Backends::cpu_and_cuda);
  check_float_dtype("rotary", {&x});
  HT_CHECK(x.dim() == 4, "rotary: x must be (B, T, H, D), got shape {}", shape_str(x.shape()));
  HT_CHECK(x.size(3) % 2 == 0, "rotary: head dim D must be even, got {}", x.size(3));
  HT_CHECK(position_offset >= 0, "rotary: position_offset must be >= 0, got {}", position_offset);
  HT_CHECK(static_cast<int64_t>(inv_freq.size()) == x.size(3) / 2, "rotary: {} frequencies for head dim {} (expected {})",
           inv_freq.size(), x.size(3), x.size(3) / 2);
  for (double f : inv_freq) HT_CHECK(std::isfinite(f), "rotary: the frequencies must be finite, got {}", f);
  const cpu::RotaryDims dims{x.size(0), x.size(1), x.size(2), x.size(3)};
  const Tensor xc = x.contiguous();
  Tensor out = empty(x.shape(), x.dtype(), x.device());
  if constexpr (hetu::cuda::kBuilt) {
    if (x.device().is_cuda()) {
      HT_CHECK(dims.D / 2 <= cuda::kRotaryMaxPairs, "rotary on {}: head dim {} exceeds the CUDA kernel's {}",
               x.device().str(), dims.D, 2 * cuda::kRotaryMaxPairs);
      hetu::cuda::DeviceGuard guard(x.device());
      cuda::rotary(x.dtype(), out.raw_data(), xc.raw_data(), dims.B, dims.T, dims.H, dims.D, position_offset,
                   inv_freq.data(), inverse);
      return out;
    }
  }
  HT_DISPATCH_FLOAT(x.dtype(), "rotary", x.device(), [&] {
    cpu::rotary<scalar_t>(out.data<scalar_t>(), xc.data<scalar_t>(), dims, position_offset, inv_freq.data(), inverse);
  });
  return out;
}

}  // namespace hetu::ops
