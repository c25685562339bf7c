// CUDA row gathers and their deterministic scatter-add backward (indexing.cu), shared by
// embedding and index_select. A contiguous tensor is seen as (outer, rows, inner) around the
// indexed dim; index (k) is contiguous i32/i64 with every entry in [0, rows).
#pragma once

#include <cstdint>

#include "lib/core/dtype.h"

namespace hetu::ops::cuda {

// Position of the first index outside [0, limit) (its value in *bad_value), or -1. Waits for
// the device (the answer is needed on the host).
int64_t first_out_of_range(DType index_dtype, const void* index, int64_t n, int64_t limit, int64_t* bad_value);
// out (outer, k, inner) = src (outer, rows, inner)[:, index[j], :]
void gather_rows(DType dtype, DType index_dtype, void* out, const void* src, const void* index, int64_t outer,
                 int64_t rows, int64_t k, int64_t inner);
// out (outer, rows, inner) = Σ over j with index[j] == r of grad (outer, k, inner)[:, j, :], in ascending j.
void scatter_add_rows(DType dtype, DType index_dtype, void* out, const void* grad, const void* index, int64_t outer,
                      int64_t rows, int64_t k, int64_t inner);

}  // namespace hetu::ops::cuda
