// CPU kernels for row gathers and their scatter-add backward, shared by embedding and
// index_select. A contiguous tensor is seen as (outer, rows, inner) around the indexed dim:
//   gather_rows:      out (outer, K, inner)    = src (outer, rows, inner)[:, index[k], :]
//   scatter_add_rows: out (outer, rows, inner) = Σ over k with index[k] == r of grad[:, k, :]
// Indices must already be in [0, rows): callers check with first_out_of_range.
#pragma once

#include <cstdint>

namespace hetu::ops::cpu {

// Position of the first index outside [0, limit), or -1 when all are inside.
template <typename index_t> int64_t first_out_of_range(const index_t* index, int64_t n, int64_t limit);

template <typename scalar_t, typename index_t>
void gather_rows(scalar_t* out, const scalar_t* src, const index_t* index, int64_t outer, int64_t rows, int64_t k,
                 int64_t inner);

// Writes every element of out (no need to zero it). Deterministic: each output row sums its
// contributions in ascending k, whatever the thread count.
template <typename scalar_t, typename index_t>
void scatter_add_rows(scalar_t* out, const scalar_t* grad, const index_t* index, int64_t outer, int64_t rows,
                      int64_t k, int64_t inner);

// out (rows, inner) += the same sums for outer = 1, touching only the rows that index names:
// each such row's contributions are summed from zero in ascending k, then added to it, so
// the result equals out + scatter_add_rows(...) bit for bit.
template <typename scalar_t, typename index_t>
void scatter_add_rows_into(scalar_t* out, const scalar_t* grad, const index_t* index, int64_t k, int64_t inner);

}  // namespace hetu::ops::cpu
