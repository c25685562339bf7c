// Launchers of the copy, cast and fill kernels of copy.cu (plain C++ interface). Pointers
// are element 0 of each view; the StridedSpace gives operand 0 = dst, operand 1 = src.
// Casts on the device: between the float dtypes (f32, f64, bf16, f16), between the integer
// dtypes, and integer -> float. Float -> integer casts (which must check ranges) are done on
// the host by the caller.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "lib/core/cuda/strided.h"
#include "lib/core/dtype.h"

namespace hetu::cuda {

bool device_can_cast(DType dst, DType src);
void launch_copy(DType dst_dtype, void* dst, DType src_dtype, const void* src, const StridedSpace& space,
                 cudaStream_t stream);
// `bits` holds one element of dst's dtype in its low dtype_size(dtype) bytes.
void launch_fill(DType dtype, void* dst, const StridedSpace& space, uint64_t bits, cudaStream_t stream);

}  // namespace hetu::cuda
