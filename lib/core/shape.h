// Shapes and strides (in elements), broadcasting, dimension wrapping.
//
//   contiguous_strides({2, 3, 4}) == {12, 4, 1}
//   broadcast_shapes({4, 1, 3}, {5, 1}) == {4, 5, 3}
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hetu {

using Shape = std::vector<int64_t>;

int64_t shape_numel(const Shape& shape);
Shape contiguous_strides(const Shape& shape);
// NumPy broadcasting; throws naming both shapes when they are incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b);
// Maps dim in [-ndim, ndim) to [0, ndim); throws otherwise.
int64_t wrap_dim(int64_t dim, int64_t ndim);
std::string shape_str(const Shape& shape);  // "(2, 3)"

}  // namespace hetu
