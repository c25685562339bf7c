// Public rotary position embedding (ops.h): argument checks, output shape, kernel dispatch.
// x (B, T, H, D) with D even -> out of the same shape; the backward is rotary(grad, ..., !inverse).
// The kernels (lib/ops/cpu/rotary.cpp, lib/ops/cuda/rotary.cu) take contiguous buffers, so x
// is made contiguous here, and the D/2 frequencies the caller computed once.
#include "lib/ops/cpu/rotary.h"
#include "lib/ops/cuda/rotary.h"

#include <cmath>

#include "lib/ops/op_checks.h"
#include "lib/ops/ops.h"
#include "lib/ops/f16_storage.h"

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

namespace {

// Both forms: positions empty (row t at position_offset + t) or one position per (b, t) row.
Tensor rotary_at(const Tensor& x, int64_t position_offset, std::span<const int64_t> positions,
                 std::span<const double> inv_freq, bool inverse) {
  if (stores_f16({&x})) return narrowed(rotary_at(widened(x), position_offset, positions, inv_freq, inverse));
  check_inputs("rotary", {&x}, Backends::cpu_and_cuda);
  check_float_dtype("rotary", {&x});
  HT_CHECK(x.dim() == 4, "rotary: x must be (B, T, H, D), got shape {}", shape_str(x.shape()));
  HT_CHECK(x.size(3) % 2 == 0, "rotary: head dim D must be even, got {}", x.size(3));
  HT_CHECK(position_offset >= 0, "rotary: position_offset must be >= 0, got {}", position_offset);
  HT_CHECK(static_cast<int64_t>(inv_freq.size()) == x.size(3) / 2, "rotary: {} frequencies for head dim {} (expected {})",
           inv_freq.size(), x.size(3), x.size(3) / 2);
  for (double f : inv_freq) HT_CHECK(std::isfinite(f), "rotary: the frequencies must be finite, got {}", f);
  const int64_t* row_positions = nullptr;
  if (!positions.empty()) {
    HT_CHECK(static_cast<int64_t>(positions.size()) == x.size(0) * x.size(1),
             "rotary: {} positions for x of shape {} (expected B·T = {})", positions.size(), shape_str(x.shape()),
             x.size(0) * x.size(1));
    for (int64_t p : positions) HT_CHECK(p >= 0, "rotary: positions must be >= 0, got {}", p);
    row_positions = positions.data();
  }
  const cpu::RotaryDims dims{x.size(0), x.size(1), x.size(2), x.size(3)};
  const Tensor xc = x.contiguous();
  Tensor out = empty(x.shape(), x.dtype(), x.device());
  if constexpr (hetu::cuda::kBuilt) {
    if (x.device().is_cuda()) {
      HT_CHECK(dims.D / 2 <= cuda::kRotaryMaxPairs, "rotary on {}: head dim {} exceeds the CUDA kernel's {}",
               x.device().str(), dims.D, 2 * cuda::kRotaryMaxPairs);
      hetu::cuda::DeviceGuard guard(x.device());
      cuda::rotary(x.dtype(), out.raw_data(), xc.raw_data(), dims.B, dims.T, dims.H, dims.D, position_offset,
                   inv_freq.data(), inverse, row_positions);
      return out;
    }
  }
  HT_DISPATCH_FLOAT(x.dtype(), "rotary", x.device(), [&] {
    cpu::rotary<scalar_t>(out.data<scalar_t>(), xc.data<scalar_t>(), dims, position_offset, inv_freq.data(), inverse,
                          row_positions);
  });
  return out;
}

}  // namespace

Tensor rotary(const Tensor& x, int64_t position_offset, std::span<const double> inv_freq, bool inverse) {
  return rotary_at(x, position_offset, {}, inv_freq, inverse);
}

Tensor rotary(const Tensor& x, std::span<const int64_t> positions, std::span<const double> inv_freq, bool inverse) {
  HT_CHECK(!positions.empty() || x.numel() == 0, "rotary: no positions given");
  return rotary_at(x, 0, positions, inv_freq, inverse);
}

std::vector<int64_t> segment_positions(std::span<const int64_t> cu_seqlens) {
  HT_CHECK(!cu_seqlens.empty() && cu_seqlens.front() == 0, "segment_positions: offsets must start at 0");
  std::vector<int64_t> positions(static_cast<size_t>(cu_seqlens.back()));
  for (size_t s = 0; s + 1 < cu_seqlens.size(); ++s) {
    HT_CHECK(cu_seqlens[s] <= cu_seqlens[s + 1], "segment_positions: offsets must not decrease ({} then {})",
             cu_seqlens[s], cu_seqlens[s + 1]);
    for (int64_t i = cu_seqlens[s]; i < cu_seqlens[s + 1]; ++i) positions[static_cast<size_t>(i)] = i - cu_seqlens[s];
  }
  return positions;
}

}  // namespace hetu::ops
