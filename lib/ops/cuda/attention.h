// CUDA causal attention with grouped-query heads, contract of ops::attention /
// attention_backward: q, out, dout, dq (B, H, T, D); k, v, dk, dv (B, Hkv, Tk, D); lse
// (B, H, T) f32. All contiguous, f32 or bf16, on the current device. Two implementations:
//   flash (default): fused tiled kernels, flash_attention.{h,cu}; O(T) memory per head.
//   gemm: the naive reference, attention.cpp + attention.cu: cuBLAS batched GEMMs + row
//         softmax kernels with the scores materialised (f32, O(T²) memory per head).
// HETU_CUDA_ATTENTION=gemm|flash picks one at first use; set_attention_kernel overrides it
// (tests run both). Head dims the flash kernels do not take (> 128, or too much shared
// memory for the device: flash_attention_supported) run on the gemm path whatever the choice.
//
//   cuda::set_attention_kernel(cuda::AttentionKernel::gemm);  // every later call, all threads
#pragma once

#include <cstdint>

#include "lib/core/tensor.h"
#include "lib/ops/cuda/flash_attention.h"

namespace hetu::ops::cuda {

enum class AttentionKernel { gemm, flash };

// The implementation in use: set_attention_kernel's, else HETU_CUDA_ATTENTION's (read once;
// anything but "gemm", "flash" or empty is a UsageError), else flash.
AttentionKernel attention_kernel();
void set_attention_kernel(AttentionKernel kernel);

void attention_forward(const AttentionShape& s, double scale, const Tensor& q, const Tensor& k, const Tensor& v,
                       const Tensor& out, const Tensor& lse);
// Needs Tk == T.
void attention_backward(const AttentionShape& s, double scale, const Tensor& dout, const Tensor& q, const Tensor& k,
                        const Tensor& v, const Tensor& out, const Tensor& lse, const Tensor& dq, const Tensor& dk,
                        const Tensor& dv);

}  // namespace hetu::ops::cuda
