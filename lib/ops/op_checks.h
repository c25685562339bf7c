// Argument checks shared by the public op functions: every message starts with the op name.
#pragma once

#include <initializer_list>
#include <string_view>

#include "lib/core/dispatch.h"
#include "lib/core/tensor.h"

namespace hetu::ops {

// Defined, on one device, and (for now) on the CPU: the only backend in this build.
inline void check_inputs(std::string_view op, std::initializer_list<const Tensor*> tensors) {
  const Tensor* first = nullptr;
  for (const Tensor* t : tensors) {
    HT_CHECK(t->defined(), "{}: an input tensor is undefined", op);
    if (first == nullptr) first = t;
    HT_CHECK(t->device() == first->device(), "{}: inputs on different devices ({} and {})", op,
             first->device().str(), t->device().str());
  }
  if (first != nullptr && !first->device().is_cpu()) op_not_implemented(op, first->device(), first->dtype());
}

// f32 or f64, and the same dtype for all.
inline void check_float_dtype(std::string_view op, std::initializer_list<const Tensor*> tensors) {
  const Tensor* first = *tensors.begin();
  for (const Tensor* t : tensors) {
    if (t->dtype() != DType::f32 && t->dtype() != DType::f64) op_not_implemented(op, t->device(), t->dtype());
    HT_CHECK(t->dtype() == first->dtype(), "{}: dtypes differ ({} and {})", op, to_string(first->dtype()),
             to_string(t->dtype()));
  }
}

inline void check_index_dtype(std::string_view op, const Tensor& index) {
  if (index.dtype() != DType::i32 && index.dtype() != DType::i64) op_not_implemented(op, index.device(), index.dtype());
}

}  // namespace hetu::ops
