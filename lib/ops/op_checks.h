// Argument checks shared by the public op functions: every message starts with the op name.
// Devices: an op accepts CUDA tensors only when it passes Backends::cpu_and_cuda (it then
// routes them to lib/ops/cuda) and hetu was built with the CUDA backend; otherwise they fail
// with "op X not implemented for device cuda:N / dtype Z". Compute dtypes: f32/f64 on the
// CPU, f32/bf16/f16 on CUDA (bf16 and f16 computed in f32; saved statistics are f32:
// stat_dtype). CPU f16 tensors never reach these checks: the ops widen them first
// (f16_storage.h).
#pragma once

#include <initializer_list>
#include <string_view>

#include "lib/core/cuda_runtime.h"
#include "lib/core/dispatch.h"
#include "lib/core/tensor.h"

namespace hetu::ops {

enum class Backends : uint8_t { cpu, cpu_and_cuda };

// Defined, on one device, and on a device this op runs on.
inline void check_inputs(std::string_view op, std::initializer_list<const Tensor*> tensors,
                         Backends backends = Backends::cpu) {
  const Tensor* first = nullptr;
  for (const Tensor* t : tensors) {
    HT_CHECK(t->defined(), "{}: an input tensor is undefined", op);
    if (first == nullptr) first = t;
    HT_CHECK(t->device() == first->device(), "{}: inputs on different devices ({} and {})", op,
             first->device().str(), t->device().str());
  }
  if (first == nullptr || first->device().is_cpu()) return;
  if (!hetu::cuda::kBuilt || backends != Backends::cpu_and_cuda) op_not_implemented(op, first->device(), first->dtype());
}

inline bool is_compute_dtype(Device device, DType dtype) {
  return device.is_cuda() ? dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16
                          : dtype == DType::f32 || dtype == DType::f64;
}

// A compute dtype of the tensors' device, and the same dtype for all.
inline void check_float_dtype(std::string_view op, std::initializer_list<const Tensor*> tensors) {
  const Tensor* first = *tensors.begin();
  for (const Tensor* t : tensors) {
    if (!is_compute_dtype(t->device(), t->dtype())) op_not_implemented(op, t->device(), t->dtype());
    HT_CHECK(t->dtype() == first->dtype(), "{}: dtypes differ ({} and {})", op, to_string(first->dtype()),
             to_string(t->dtype()));
  }
}

// The dtype of saved statistics (norm mean/rstd, attention lse) and of CUDA losses: f32 for
// CUDA tensors and CPU f16 ones (16-bit rounding would spoil the backward), the input's
// dtype on the CPU otherwise.
inline DType stat_dtype(const Tensor& x) {
  return x.device().is_cuda() || x.dtype() == DType::f16 ? DType::f32 : x.dtype();
}

inline void check_index_dtype(std::string_view op, const Tensor& index) {
  if (index.dtype() != DType::i32 && index.dtype() != DType::i64) op_not_implemented(op, index.device(), index.dtype());
}

// Class targets (N) contiguous, on their device: each is ignore_index or in [0, V), else
// "<op>: target T at row n is outside [0, V) ..." (lib/ops/cross_entropy.cpp). Returns the
// rows not ignored.
int64_t check_class_targets(std::string_view op, const Tensor& targets, int64_t N, int64_t V, int64_t ignore_index);


}  // namespace hetu::ops
