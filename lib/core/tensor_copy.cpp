// Copies between tensors: strided, broadcasting and casting, on the CPU. Copies that touch a
// CUDA device go to cuda::copy_tensor (lib/core/cuda/transfer.cpp; CPU-only builds throw).
#include <cmath>
#include <cstring>
#include <limits>

#include "lib/core/cuda_runtime.h"
#include "lib/core/dispatch.h"
#include "lib/core/strided_loop.h"
#include "lib/core/tensor.h"

namespace hetu {
namespace {

// Float -> integer truncates toward zero; NaN, inf and out-of-range values are errors
// (the plain conversion would be undefined behaviour).
template <typename Int, typename Float>
Int to_integer(Float value) {
  const double v = static_cast<double>(value);
  HT_CHECK(std::isfinite(v) && v > static_cast<double>(std::numeric_limits<Int>::min()) - 1.0 &&
               v < static_cast<double>(std::numeric_limits<Int>::max()) + 1.0,
           "cast: value {} does not fit the integer dtype {}", v, to_string(dtype_of<Int>()));
  return static_cast<Int>(value);
}

template <typename Src, typename Dst>
void copy_rows(const Tensor& dst, const Tensor& src) {
  Dst* out = static_cast<Dst*>(dst.storage()->data());
  const Src* in = static_cast<const Src*>(src.storage()->data());
  for_each_row<2>(dst.shape(), {dst.strides(), src.strides()}, {dst.offset(), src.offset()},
                  [&](auto off, int64_t n, auto step) {
                    Dst* o = out + off[0];
                    const Src* s = in + off[1];
                    if constexpr (std::is_same_v<Src, Dst>) {
                      if (step[0] == 1 && step[1] == 1) {
                        std::memcpy(o, s, static_cast<size_t>(n) * sizeof(Dst));
                        return;
                      }
                      for (int64_t i = 0; i < n; ++i) o[i * step[0]] = s[i * step[1]];
                    } else if constexpr (std::is_floating_point_v<Src> && std::is_integral_v<Dst>) {
                      for (int64_t i = 0; i < n; ++i) o[i * step[0]] = to_integer<Dst>(s[i * step[1]]);
                    } else if constexpr (std::is_arithmetic_v<Src> && std::is_arithmetic_v<Dst>) {
                      for (int64_t i = 0; i < n; ++i) o[i * step[0]] = static_cast<Dst>(s[i * step[1]]);
                    } else {
                      for (int64_t i = 0; i < n; ++i) o[i * step[0]] = from_double<Dst>(to_double(s[i * step[1]]));
                    }
                  });
}

}  // namespace

void Tensor::copy_from(const Tensor& src) const {
  const Tensor expanded = src.shape() == shape() ? src : src.expand(shape());
  if (!device().is_cpu() || !src.device().is_cpu()) {
    // if constexpr: CPU-only builds (and targets that compile these sources alone, like the
    // fuzzers) need no CUDA symbols.
    if constexpr (cuda::kBuilt) {
      cuda::copy_tensor(*this, expanded);
      return;
    }
    HT_THROW("copy_from: {} -> {} copies need the CUDA backend (built without it)", src.device().str(),
             device().str());
  }
  HT_DISPATCH_ALL(src.dtype(), [&] {
    using Src = scalar_t;
    HT_DISPATCH_ALL(dtype(), [&] { copy_rows<Src, scalar_t>(*this, expanded); });
  });
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  Tensor out = empty(shape(), dtype(), device());
  out.copy_from(*this);
  return out;
}

Tensor Tensor::to(DType target) const {
  if (target == dtype()) return *this;
  Tensor out = empty(shape(), target, device());
  out.copy_from(*this);
  return out;
}

void Tensor::move_to(Device target) const {
  if (target == device()) return;
  const Tensor moved = to(target);
  impl_->storage_ = moved.storage();
  impl_->strides_ = moved.strides();
  impl_->offset_ = moved.offset();
}

Tensor Tensor::to(Device target) const {
  if (target == device()) return *this;
  if (target.is_cuda() || device().is_cuda()) {
    if constexpr (cuda::kBuilt) {
      HT_CHECK(cuda::is_available(), "to({}): no backend for {} -> {} copies: no usable CUDA device ({})",
               target.str(), device().str(), target.str(), cuda::unavailable_reason());
    } else {
      HT_THROW("to({}): no backend for {} -> {} copies in this build (built without CUDA)", target.str(),
               device().str(), target.str());
    }
  }
  Tensor out = empty(shape(), dtype(), target);
  out.copy_from(*this);
  return out;
}

}  // namespace hetu
