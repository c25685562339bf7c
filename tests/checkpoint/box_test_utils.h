// Helpers for the sharded-checkpoint tests (tests/checkpoint and tests/hspmd/mpi): tensors whose
// elements are their own flat index (so every box has distinct, predictable contents), and
// a box cut out of a tensor by the definition, one element at a time, never by the code
// under test.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "lib/core/tensor.h"
#include "lib/hspmd/geometry.h"

namespace hetu::test {

// Element i (row-major) = base + i, wrapped to 0..250 for u8; exact in every dtype for the
// small sizes used here (bf16 holds integers up to 256 exactly).
inline Tensor index_tensor(const Shape& shape, DType dtype, int64_t base) {
  const int64_t n = shape_numel(shape);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = dtype == DType::u8 ? (base + i) % 251 : base + i;
  return tensor_from(v, shape).to(dtype);
}

// The bytes of `box` of a contiguous tensor, row-major, by walking every element.
inline std::vector<unsigned char> box_bytes(const Tensor& full, const Box& box) {
  const Tensor c = full.contiguous();
  const Shape& shape = c.shape();
  const size_t es = dtype_size(c.dtype());
  const auto* p = static_cast<const unsigned char*>(c.raw_data());
  std::vector<unsigned char> out;
  for (int64_t i = 0; i < c.numel(); ++i) {
    int64_t rest = i;
    bool inside = true;
    for (size_t d = shape.size(); d-- > 0;) {
      const int64_t coord = rest % shape[d];
      rest /= shape[d];
      inside = inside && coord >= box.offset[d] && coord < box.offset[d] + box.size[d];
    }
    if (inside) out.insert(out.end(), p + static_cast<size_t>(i) * es, p + static_cast<size_t>(i + 1) * es);
  }
  return out;
}

inline std::vector<unsigned char> bytes_of(const Tensor& t) {
  const Tensor c = t.contiguous();
  const auto* p = static_cast<const unsigned char*>(c.raw_data());
  return {p, p + static_cast<size_t>(c.numel()) * dtype_size(c.dtype())};
}

// A box of `full` as a fresh contiguous tensor (the values a rank owning it would save).
inline Tensor box_of(const Tensor& full, const Box& box) {
  Tensor out = empty(box.size, full.dtype());
  const std::vector<unsigned char> bytes = box_bytes(full, box);
  if (!bytes.empty()) std::memcpy(out.raw_data(), bytes.data(), bytes.size());
  return out;
}

}  // namespace hetu::test
