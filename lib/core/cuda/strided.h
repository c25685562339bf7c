// A strided iteration space for CUDA kernels, passed to a kernel by value: up to kMaxDims
// dims (after merging dims that are contiguous in every operand) and up to kMaxOperands
// operands, each with its own element strides (0 for a broadcast dim). Operand 0 is the
// output. Plain C++: included by .cu files and by host code.
//
//   StridedSpace s = make_strided_space(out, {&a, &b});   // a, b already expanded to out's shape
//   // element i of the flat (row-major) index space sits at offset(s, k, i) in operand k
#pragma once

#include <cstdint>
#include <initializer_list>

namespace hetu {
class Tensor;
}

namespace hetu::cuda {

inline constexpr int kMaxDims = 8;
inline constexpr int kMaxOperands = 3;

struct StridedSpace {
  int ndim = 0;
  int64_t numel = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxOperands][kMaxDims] = {};
};

// The space of `out` and `inputs` (same shape as out; at most kMaxOperands - 1 of them).
// Dims of size 1 are dropped and neighbouring dims merged when every operand allows; throws
// when more than kMaxDims dims remain. Host code (lib/core/cuda/transfer.cpp).
StridedSpace make_strided_space(const Tensor& out, std::initializer_list<const Tensor*> inputs);

#if defined(__CUDACC__)
// Element offset of flat index i in operand k.
__host__ __device__ inline int64_t strided_offset(const StridedSpace& s, int k, int64_t i) {
  int64_t offset = 0;
  for (int d = s.ndim - 1; d >= 0; --d) {
    const int64_t size = s.sizes[d];
    offset += (i % size) * s.strides[k][d];
    i /= size;
  }
  return offset;
}
#endif

}  // namespace hetu::cuda
