// Error checks for CUDA runtime, cuBLAS and kernel launches, usable in .cu files (no fmt,
// no spdlog: see docs/TOOLCHAIN.md): a failed call throws hetu::Error carrying the call's
// text, the CUDA error name and message, and the caller's file:line.
//
//   HT_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, stream));
//   kernel<<<grid, block, 0, stream>>>(...);  HT_CUDA_CHECK_LAUNCH();
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace hetu::cuda {

[[noreturn]] void throw_cuda_error(const char* file, int line, const char* call, const char* detail);
void check_cuda(cudaError_t status, const char* file, int line, const char* call);
// cuBLAS status codes are plain ints here so this header does not need cublas_v2.h.
void check_cublas(int status, const char* file, int line, const char* call);

// cudaStream_t of the current device's current stream.
cudaStream_t stream();

// Scratch memory on the current device from the caching allocator (allocator.cpp), for
// kernels' workspaces; free with the same size. Plain functions so .cu files need no
// lib/core/storage.h (C++20, which nvcc does not get: see cmake/HetuCuda.cmake).
void* scratch_allocate(size_t bytes);
void scratch_free(void* ptr, size_t bytes);

}  // namespace hetu::cuda

#define HT_CUDA_CHECK(call) ::hetu::cuda::check_cuda((call), __FILE__, __LINE__, #call)
#define HT_CUDA_CHECK_LAUNCH() ::hetu::cuda::check_cuda(cudaGetLastError(), __FILE__, __LINE__, "kernel launch")
#define HT_CUBLAS_CHECK(call) ::hetu::cuda::check_cublas(static_cast<int>(call), __FILE__, __LINE__, #call)
