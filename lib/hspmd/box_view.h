// box_view: the part of a tensor that holds `held` (a box in view coordinates, row-major over
// held.size) covering `box`, as a strided view. box must lie inside held; the callers check it.
#pragma once

#include <cstddef>

#include "lib/core/tensor.h"
#include "lib/hspmd/geometry.h"

namespace hetu {

inline Tensor box_view(const Tensor& values, const Box& held, const Box& box) {
  Tensor view = values;
  for (size_t d = 0; d < box.size.size(); ++d)
    view = view.narrow(static_cast<int64_t>(d), box.offset[d] - held.offset[d], box.size[d]);
  return view;
}

}  // namespace hetu
