// Row-by-row iteration over N strided operands that share one logical shape (broadcast
// operands carry stride 0). The callback gets the element offsets of the row start for each
// operand, the row length and each operand's stride along the row; kernels write the tight
// inner loop themselves.
//
//   for_each_row<2>(out.shape(), {out.strides(), in.strides()}, {0, 0},
//                   [&](auto off, int64_t n, auto step) { for (i < n) o[off[0]+i*step[0]] = ...; });
#pragma once

#include <array>
#include <cstdint>

#include "lib/core/shape.h"

namespace hetu {

template <size_t N, typename Fn>
void for_each_row(const Shape& shape, const std::array<Shape, N>& strides, std::array<int64_t, N> base, Fn&& fn) {
  const int64_t ndim = static_cast<int64_t>(shape.size());
  if (shape_numel(shape) == 0) return;
  if (ndim == 0) {
    std::array<int64_t, N> zero{};
    fn(base, int64_t{1}, zero);
    return;
  }
  const int64_t inner = shape[static_cast<size_t>(ndim - 1)];
  std::array<int64_t, N> inner_stride;
  for (size_t k = 0; k < N; ++k) inner_stride[k] = strides[k][static_cast<size_t>(ndim - 1)];
  const int64_t rows = shape_numel(shape) / inner;
  Shape index(static_cast<size_t>(ndim), 0);
  std::array<int64_t, N> offset = base;
  for (int64_t row = 0; row < rows; ++row) {
    fn(offset, inner, inner_stride);
    // Advance the outer index (all dims but the last), updating offsets incrementally.
    for (int64_t d = ndim - 2; d >= 0; --d) {
      const size_t du = static_cast<size_t>(d);
      if (++index[du] < shape[du]) {
        for (size_t k = 0; k < N; ++k) offset[k] += strides[k][du];
        break;
      }
      for (size_t k = 0; k < N; ++k) offset[k] -= strides[k][du] * (shape[du] - 1);
      index[du] = 0;
    }
  }
}

}  // namespace hetu
