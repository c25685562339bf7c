// Copy, cast and fill kernels over a StridedSpace (lib/core/cuda/strided.h).
// Launch: 1-d grid-stride loops, 256 threads per block, at most 65536 blocks; one thread per
// element, offsets recomputed from the flat index (div/mod per merged dim). Contiguous
// same-dtype copies never come here (the host uses cudaMemcpyAsync).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "lib/core/cuda/copy_kernels.h"
#include "lib/core/cuda/cuda_check.h"

namespace hetu::cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65536 ? (blocks > 0 ? blocks : 1) : 65536);
}

template <typename T> constexpr bool kIsInt = std::is_integral_v<T>;
template <typename T> constexpr bool kIsSmallFloat =
    std::is_same_v<T, float> || std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>;

template <typename T> __device__ float to_f(T v) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(v);
  else if constexpr (std::is_same_v<T, __half>) return __half2float(v);
  else return static_cast<float>(v);
}
template <typename T> __device__ T from_f(float v) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(v);
  else if constexpr (std::is_same_v<T, __half>) return __float2half_rn(v);
  else return static_cast<T>(v);
}
template <typename T> __device__ double to_d(T v) {
  if constexpr (kIsSmallFloat<T>) return static_cast<double>(to_f(v));
  else return static_cast<double>(v);
}
template <typename T> __device__ T from_d(double v) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __double2bfloat16(v);
  else if constexpr (std::is_same_v<T, __half>) return __double2half(v);
  else return static_cast<T>(v);
}

template <typename D, typename S> __device__ D convert(S v) {
  if constexpr (std::is_same_v<D, S>) return v;
  else if constexpr (kIsInt<D> && kIsInt<S>) return static_cast<D>(v);
  else if constexpr (kIsSmallFloat<D> && kIsSmallFloat<S>) return from_f<D>(to_f(v));
  else return from_d<D>(to_d(v));
}

template <typename D, typename S> __global__ void copy_kernel(D* dst, const S* src, StridedSpace s) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < s.numel;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[strided_offset(s, 0, i)] = convert<D>(src[strided_offset(s, 1, i)]);
  }
}

template <typename T> __global__ void fill_kernel(T* dst, StridedSpace s, T value) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < s.numel;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[strided_offset(s, 0, i)] = value;
  }
}

// Runs fn(T{}) with T the device storage type of dtype.
template <typename Fn> void dispatch(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::f32: return fn(float{});
    case DType::f64: return fn(double{});
    case DType::bf16: return fn(__nv_bfloat16{});
    case DType::f16: return fn(__half{});
    case DType::i32: return fn(int32_t{});
    case DType::i64: return fn(int64_t{});
    case DType::u8: return fn(uint8_t{});
  }
}

// Same-dtype copies move bits: one kernel per element size.
template <typename Fn> void dispatch_bits(DType dtype, Fn&& fn) {
  switch (dtype_size(dtype)) {
    case 1: return fn(uint8_t{});
    case 2: return fn(uint16_t{});
    case 4: return fn(uint32_t{});
    default: return fn(uint64_t{});
  }
}

}  // namespace

bool device_can_cast(DType dst, DType src) { return dst == src || !is_floating(src) || is_floating(dst); }

void launch_copy(DType dst_dtype, void* dst, DType src_dtype, const void* src, const StridedSpace& space,
                 cudaStream_t stream) {
  if (space.numel == 0) return;
  if (dst_dtype == src_dtype) {
    dispatch_bits(dst_dtype, [&](auto tag) {
      using T = decltype(tag);
      copy_kernel<T, T><<<blocks_for(space.numel), kThreads, 0, stream>>>(static_cast<T*>(dst),
                                                                         static_cast<const T*>(src), space);
    });
  } else {
    if (!device_can_cast(dst_dtype, src_dtype)) {
      throw_cuda_error(__FILE__, __LINE__, "launch_copy", "float -> integer casts are not done on the device");
    }
    dispatch(dst_dtype, [&](auto dtag) {
      using D = decltype(dtag);
      dispatch(src_dtype, [&](auto stag) {
        using S = decltype(stag);
        if constexpr (!(kIsInt<D> && !kIsInt<S>)) {
          copy_kernel<D, S><<<blocks_for(space.numel), kThreads, 0, stream>>>(static_cast<D*>(dst),
                                                                             static_cast<const S*>(src), space);
        }
      });
    });
  }
  HT_CUDA_CHECK_LAUNCH();
}

void launch_fill(DType dtype, void* dst, const StridedSpace& space, uint64_t bits, cudaStream_t stream) {
  if (space.numel == 0) return;
  dispatch_bits(dtype, [&](auto tag) {
    using T = decltype(tag);
    fill_kernel<T><<<blocks_for(space.numel), kThreads, 0, stream>>>(static_cast<T*>(dst), space,
                                                                    static_cast<T>(bits));
  });
  HT_CUDA_CHECK_LAUNCH();
}

}  // namespace hetu::cuda
