// Tensor: a typed, strided view of a Storage (shape + strides + offset, in elements).
// Copying a Tensor copies the handle; views (view, reshape, transpose, permute, narrow,
// slice, expand, squeeze, unsqueeze) share storage and never copy. contiguous(), to() and
// clone() copy when they must. Autograd state (requires_grad, grad, the node that made
// it) rides on the tensor; lib/autograd gives it meaning.
//
//   Tensor x = arange(0, 6).view({2, 3});   // [[0,1,2],[3,4,5]], f32
//   Tensor y = x.transpose(0, 1);            // (3, 2) view, strides (1, 3), not contiguous
//   y.contiguous().data<float>()[1] == 3.0f
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "lib/core/device.h"
#include "lib/core/dtype.h"
#include "lib/core/shape.h"
#include "lib/core/storage.h"
#include "lib/util/error.h"

namespace hetu {

class TensorImpl;
class AutogradNode;  // defined in lib/autograd

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  DType dtype() const;
  Device device() const;
  const Shape& shape() const;
  const Shape& strides() const;
  int64_t offset() const;
  int64_t dim() const;
  int64_t size(int64_t dim) const;
  int64_t numel() const;
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const;

  // Pointer to element 0 of this view; T must match the dtype (storage type for bf16/f16).
  template <typename T> T* data() const;
  void* raw_data() const;
  // The value of a one-element tensor, converted to double.
  double item() const;

  // ---- views (share storage) ----
  Tensor view(Shape shape) const;          // requires compatible strides; one dim may be -1
  Tensor reshape(Shape shape) const;       // view when possible, else copy
  Tensor transpose(int64_t a, int64_t b) const;
  Tensor permute(const std::vector<int64_t>& order) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;  // drops dim
  Tensor expand(Shape shape) const;        // broadcast view (stride 0)
  Tensor unsqueeze(int64_t dim) const;
  Tensor squeeze(int64_t dim) const;

  // ---- copies ----
  Tensor contiguous() const;  // this if already contiguous
  Tensor clone() const;       // always a fresh contiguous copy
  Tensor to(DType dtype) const;
  Tensor to(Device device) const;
  // Moves this tensor's elements to `device` in place: every handle to this tensor sees the
  // new storage (a contiguous copy). For parameters, moved once after the model is built.
  void move_to(Device device) const;
  // Copies src (broadcastable to this shape, any dtype) into this tensor's elements.
  void copy_from(const Tensor& src) const;

  // ---- autograd state ----
  bool requires_grad() const;
  Tensor& set_requires_grad(bool value);
  Tensor grad() const;
  void set_grad(Tensor grad) const;
  const std::shared_ptr<AutogradNode>& grad_fn() const;
  void set_grad_fn(std::shared_ptr<AutogradNode> node) const;
  // This tensor without history: same storage, no grad_fn, requires_grad false.
  Tensor detach() const;

  TensorImpl* impl() const { return impl_.get(); }
  bool same(const Tensor& other) const { return impl_ == other.impl_; }

 private:
  void check_defined() const;
  std::shared_ptr<TensorImpl> impl_;
};

class TensorImpl {
 public:
  TensorImpl(std::shared_ptr<Storage> storage, DType dtype, Shape shape, Shape strides, int64_t offset)
      : storage_(std::move(storage)), dtype_(dtype), shape_(std::move(shape)), strides_(std::move(strides)),
        offset_(offset) {}

  std::shared_ptr<Storage> storage_;
  DType dtype_;
  Shape shape_;
  Shape strides_;
  int64_t offset_;
  bool requires_grad_ = false;
  Tensor grad_;
  std::shared_ptr<AutogradNode> grad_fn_;
};

// ---- factories ----
Tensor empty(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu());
Tensor zeros(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu());
Tensor ones(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu());
Tensor full(const Shape& shape, double value, DType dtype = DType::f32, Device device = Device::cpu());
// [start, end) in steps of `step`, as a 1-d tensor.
Tensor arange(double start, double end, double step = 1, DType dtype = DType::f32, Device device = Device::cpu());
// A tensor over memory the caller owns (contiguous); `release` runs when the last view dies.
Tensor from_blob(void* data, const Shape& shape, DType dtype, Device device = Device::cpu(),
                 std::function<void(void*)> release = {});
// A CPU tensor holding a copy of `values` (f32 from float, f64 from double, ...).
template <typename T> Tensor tensor_from(const std::vector<T>& values, const Shape& shape);

// Every element as double, row-major over the logical shape (tests, debugging).
std::vector<double> to_vector(const Tensor& tensor);

// ---- inline definitions ----
template <typename T> T* Tensor::data() const {
  check_defined();
  HT_CHECK(dtype_size(impl_->dtype_) == sizeof(T), "data<T>(): element size {} does not match dtype {}", sizeof(T),
           to_string(impl_->dtype_));
  return static_cast<T*>(impl_->storage_->data()) + impl_->offset_;
}

template <typename T> Tensor tensor_from(const std::vector<T>& values, const Shape& shape) {
  HT_CHECK(static_cast<int64_t>(values.size()) == shape_numel(shape), "tensor_from: {} values for shape {}",
           values.size(), shape_str(shape));
  Tensor out = empty(shape, dtype_of<T>());
  std::copy(values.begin(), values.end(), out.data<T>());
  return out;
}

}  // namespace hetu
