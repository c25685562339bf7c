// f16 on the CPU: stored in f16, computed in f32. The CPU kernels compute in f32/f64 only; a
// public op that meets a CPU f16 tensor runs its own f32 path on widened copies of its inputs
// and rounds the outputs that carry the input's dtype back to f16 (round to nearest even, as
// lib/core/dtype.h), the way the CUDA kernels load bf16/f16 into f32 registers and store the
// result. Statistics (norm mean/rstd, attention lse, cross-entropy row stats) and losses stay
// f32, as on CUDA (stat_dtype). One mechanism for every op: each public op begins with
//   if (stores_f16({&x})) return narrowed(gelu(widened(x)));
// This is the test path of precision = "fp16" (lib/optim/loss_scaler.h), not a fast one: each
// such call converts its operands.
#pragma once

#include <initializer_list>

#include "lib/core/tensor.h"

namespace hetu::ops {

// True when any defined tensor is an f16 tensor on the CPU.
inline bool stores_f16(std::initializer_list<const Tensor*> tensors) {
  for (const Tensor* t : tensors) {
    if (t->defined() && t->device().is_cpu() && t->dtype() == DType::f16) return true;
  }
  return false;
}

// An f32 copy of a CPU f16 tensor; any other tensor (undefined included) as it is.
inline Tensor widened(const Tensor& t) {
  return t.defined() && t.device().is_cpu() && t.dtype() == DType::f16 ? t.to(DType::f32) : t;
}

// `t` rounded to f16 (undefined stays undefined).
inline Tensor narrowed(const Tensor& t) { return t.defined() ? t.to(DType::f16) : t; }

}  // namespace hetu::ops
