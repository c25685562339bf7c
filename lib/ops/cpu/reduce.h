// CPU reduction kernels over the innermost `inner` elements of each of `outer` rows.
#pragma once

#include "lib/core/tensor.h"

namespace hetu::ops::cpu {

// x contiguous, viewed as (outer, inner); out (outer) = Σ row · scale (accumulated in double).
void sum_rows(const Tensor& x, int64_t inner, double scale, const Tensor& out);
// x contiguous, viewed as (rows, cols) with cols = out.numel(); out (cols) = Σ over rows · scale.
void sum_columns(const Tensor& x, int64_t rows, double scale, const Tensor& out);
// acc[c] += Σ_r x[r·ld + c] for c < cols over `rows` rows of a row-major x: column sums in
// double, in row order, taken in pieces (consecutive row ranges, in order, into the same acc)
// with the bits of one sum_columns over all rows. Results do not depend on the thread count.
template <typename T> void add_column_sums(const T* x, int64_t rows, int64_t cols, int64_t ld, double* acc);
// x contiguous (outer, inner); out (outer) = max of each row; argmax (i64, may be undefined).
void max_rows(const Tensor& x, int64_t inner, const Tensor& out, const Tensor& argmax);

}  // namespace hetu::ops::cpu
