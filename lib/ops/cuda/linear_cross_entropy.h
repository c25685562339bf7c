// CUDA side of the fused LM head + cross-entropy (lib/ops/linear_cross_entropy.cpp): the
// per-tile GEMMs are cuda::gemm (cuBLAS) and the tile passes are the vocabulary-shard
// kernels of cross_entropy.cu; this header adds what sizes the tiles.
#pragma once

#include <cstddef>

namespace hetu::ops::cuda {

// Bytes a new tile could take on `device` now: the driver's free memory plus what the
// caching allocator holds unused.
size_t available_bytes(int device);

}  // namespace hetu::ops::cuda
