// Tensor accessors, views, factories and autograd state. Copies are in tensor_copy.cpp.
#include "lib/core/tensor.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "lib/core/cuda_runtime.h"
#include "lib/core/dispatch.h"
#include "lib/core/strided_loop.h"

namespace hetu {

void Tensor::check_defined() const { HT_CHECK(impl_ != nullptr, "use of an undefined tensor"); }

DType Tensor::dtype() const { check_defined(); return impl_->dtype_; }
Device Tensor::device() const { check_defined(); return impl_->storage_->device(); }
const Shape& Tensor::shape() const { check_defined(); return impl_->shape_; }
const Shape& Tensor::strides() const { check_defined(); return impl_->strides_; }
int64_t Tensor::offset() const { check_defined(); return impl_->offset_; }
int64_t Tensor::dim() const { return static_cast<int64_t>(shape().size()); }
int64_t Tensor::size(int64_t d) const { return shape()[static_cast<size_t>(wrap_dim(d, dim()))]; }
int64_t Tensor::numel() const { return shape_numel(shape()); }
const std::shared_ptr<Storage>& Tensor::storage() const { check_defined(); return impl_->storage_; }

bool Tensor::is_contiguous() const {
  const Shape& s = shape();
  int64_t expected = 1;
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] != 1 && impl_->strides_[i] != expected) return false;
    expected *= s[i];
  }
  return true;
}

void* Tensor::raw_data() const {
  check_defined();
  return static_cast<char*>(impl_->storage_->data()) + impl_->offset_ * static_cast<int64_t>(dtype_size(impl_->dtype_));
}

double Tensor::item() const {
  HT_CHECK(numel() == 1, "item(): tensor of shape {} has {} elements, expected 1", shape_str(shape()), numel());
  if (!device().is_cpu()) return to(Device::cpu()).item();
  return HT_DISPATCH_ALL(dtype(), [&] { return to_double(*data<scalar_t>()); });
}

namespace {

Tensor make_view(const Tensor& base, Shape shape, Shape strides, int64_t offset) {
  return Tensor(std::make_shared<TensorImpl>(base.storage(), base.dtype(), std::move(shape), std::move(strides), offset));
}

// Resolves one -1 in `shape` from numel.
Shape infer_shape(Shape shape, int64_t numel) {
  int64_t known = 1;
  int64_t infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      HT_CHECK(infer < 0, "view: only one dimension may be -1 in {}", shape_str(shape));
      infer = static_cast<int64_t>(i);
    } else {
      HT_CHECK(shape[i] >= 0, "view: negative size in {}", shape_str(shape));
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    HT_CHECK(known > 0 && numel % known == 0, "view: cannot infer -1 in {} for {} elements", shape_str(shape), numel);
    shape[static_cast<size_t>(infer)] = numel / known;
  }
  HT_CHECK(shape_numel(shape) == numel, "view: shape {} has {} elements, tensor has {}", shape_str(shape),
           shape_numel(shape), numel);
  return shape;
}

// Strides for viewing (old_shape, old_strides) as new_shape without copying, if possible:
// every run of new dims must map onto a run of old dims that is contiguous in memory.
std::optional<Shape> view_strides(const Shape& old_shape, const Shape& old_strides, const Shape& new_shape) {
  Shape out(new_shape.size());
  if (shape_numel(old_shape) == 0) return contiguous_strides(new_shape);
  size_t old_i = 0, new_i = 0;
  const size_t old_n = old_shape.size(), new_n = new_shape.size();
  while (new_i < new_n || old_i < old_n) {
    // Skip size-1 dims on both sides.
    if (new_i < new_n && new_shape[new_i] == 1) { out[new_i] = 1; ++new_i; continue; }
    if (old_i < old_n && old_shape[old_i] == 1) { ++old_i; continue; }
    if (new_i >= new_n || old_i >= old_n) return std::nullopt;
    // Grow a chunk of old dims and new dims with equal element counts.
    int64_t old_count = old_shape[old_i], new_count = new_shape[new_i];
    size_t old_end = old_i + 1, new_end = new_i + 1;
    while (old_count != new_count) {
      if (old_count < new_count) {
        if (old_end >= old_n) return std::nullopt;
        old_count *= old_shape[old_end++];
      } else {
        if (new_end >= new_n) return std::nullopt;
        new_count *= new_shape[new_end++];
      }
    }
    // The old chunk must be contiguous in memory (ignoring size-1 dims).
    for (size_t k = old_i; k + 1 < old_end; ++k) {
      size_t next = k + 1;
      if (old_shape[k] == 1) continue;
      while (next < old_end && old_shape[next] == 1) ++next;
      if (next < old_end && old_strides[k] != old_strides[next] * old_shape[next]) return std::nullopt;
    }
    int64_t stride = 1;
    for (size_t k = old_end; k-- > old_i;) {
      if (old_shape[k] != 1) { stride = old_strides[k]; break; }
    }
    for (size_t k = new_end; k-- > new_i;) {
      out[k] = stride;
      stride *= new_shape[k];
    }
    old_i = old_end;
    new_i = new_end;
  }
  return out;
}

}  // namespace

Tensor Tensor::view(Shape new_shape) const {
  new_shape = infer_shape(std::move(new_shape), numel());
  std::optional<Shape> strides = view_strides(shape(), impl_->strides_, new_shape);
  HT_CHECK(strides.has_value(), "view: cannot view a tensor of shape {} with strides {} as {} without copying "
           "(use reshape)", shape_str(shape()), shape_str(impl_->strides_), shape_str(new_shape));
  return make_view(*this, std::move(new_shape), std::move(*strides), offset());
}

Tensor Tensor::reshape(Shape new_shape) const {
  new_shape = infer_shape(std::move(new_shape), numel());
  if (std::optional<Shape> strides = view_strides(shape(), impl_->strides_, new_shape)) {
    return make_view(*this, std::move(new_shape), std::move(*strides), offset());
  }
  return contiguous().view(std::move(new_shape));
}

Tensor Tensor::transpose(int64_t a, int64_t b) const {
  a = wrap_dim(a, dim());
  b = wrap_dim(b, dim());
  Shape s = shape(), st = strides();
  std::swap(s[static_cast<size_t>(a)], s[static_cast<size_t>(b)]);
  std::swap(st[static_cast<size_t>(a)], st[static_cast<size_t>(b)]);
  return make_view(*this, std::move(s), std::move(st), offset());
}

Tensor Tensor::permute(const std::vector<int64_t>& order) const {
  HT_CHECK(static_cast<int64_t>(order.size()) == dim(), "permute: {} dims given for a {}-d tensor", order.size(), dim());
  Shape s(order.size()), st(order.size());
  std::vector<bool> seen(order.size(), false);
  for (size_t i = 0; i < order.size(); ++i) {
    const size_t d = static_cast<size_t>(wrap_dim(order[i], dim()));
    HT_CHECK(!seen[d], "permute: dim {} repeated", d);
    seen[d] = true;
    s[i] = shape()[d];
    st[i] = strides()[d];
  }
  return make_view(*this, std::move(s), std::move(st), offset());
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  d = wrap_dim(d, dim());
  const int64_t n = shape()[static_cast<size_t>(d)];
  HT_CHECK(start >= 0 && length >= 0 && start + length <= n, "narrow: [{}, {}) is outside dim {} of size {}", start,
           start + length, d, n);
  Shape s = shape();
  s[static_cast<size_t>(d)] = length;
  return make_view(*this, std::move(s), strides(), offset() + start * strides()[static_cast<size_t>(d)]);
}

Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  d = wrap_dim(d, dim());
  const int64_t n = shape()[static_cast<size_t>(d)];
  HT_CHECK(step >= 1, "slice: step must be >= 1, got {}", step);
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Shape s = shape(), st = strides();
  s[static_cast<size_t>(d)] = (end - start + step - 1) / step;
  st[static_cast<size_t>(d)] *= step;
  return make_view(*this, std::move(s), std::move(st), offset() + start * strides()[static_cast<size_t>(d)]);
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  d = wrap_dim(d, dim());
  const int64_t n = shape()[static_cast<size_t>(d)];
  HT_CHECK(index >= -n && index < n, "select: index {} out of range for dim {} of size {}", index, d, n);
  if (index < 0) index += n;
  Shape s = shape(), st = strides();
  const int64_t off = offset() + index * st[static_cast<size_t>(d)];
  s.erase(s.begin() + d);
  st.erase(st.begin() + d);
  return make_view(*this, std::move(s), std::move(st), off);
}

Tensor Tensor::expand(Shape target) const {
  HT_CHECK(target.size() >= shape().size(), "expand: cannot expand {} to fewer dims {}", shape_str(shape()),
           shape_str(target));
  const size_t lead = target.size() - shape().size();
  Shape st(target.size(), 0);
  for (size_t i = 0; i < target.size(); ++i) {
    if (i < lead) continue;
    const int64_t have = shape()[i - lead];
    if (target[i] == -1) target[i] = have;
    HT_CHECK(have == target[i] || have == 1, "expand: {} does not broadcast to {}", shape_str(shape()), shape_str(target));
    st[i] = have == target[i] ? strides()[i - lead] : 0;
  }
  return make_view(*this, std::move(target), std::move(st), offset());
}

Tensor Tensor::unsqueeze(int64_t d) const {
  d = wrap_dim(d, dim() + 1);
  Shape s = shape(), st = strides();
  const int64_t stride = static_cast<size_t>(d) < s.size() ? st[static_cast<size_t>(d)] * s[static_cast<size_t>(d)] : 1;
  s.insert(s.begin() + d, 1);
  st.insert(st.begin() + d, stride);
  return make_view(*this, std::move(s), std::move(st), offset());
}

Tensor Tensor::squeeze(int64_t d) const {
  d = wrap_dim(d, dim());
  HT_CHECK(shape()[static_cast<size_t>(d)] == 1, "squeeze: dim {} has size {}, not 1", d, shape()[static_cast<size_t>(d)]);
  Shape s = shape(), st = strides();
  s.erase(s.begin() + d);
  st.erase(st.begin() + d);
  return make_view(*this, std::move(s), std::move(st), offset());
}

// ---- autograd state ----
bool Tensor::requires_grad() const { return impl_ != nullptr && impl_->requires_grad_; }
Tensor& Tensor::set_requires_grad(bool value) {
  check_defined();
  HT_CHECK(!value || is_floating(dtype()), "requires_grad needs a floating dtype, got {}", to_string(dtype()));
  impl_->requires_grad_ = value;
  return *this;
}
Tensor Tensor::grad() const { check_defined(); return impl_->grad_; }
void Tensor::set_grad(Tensor grad) const { check_defined(); impl_->grad_ = std::move(grad); }
const std::shared_ptr<AutogradNode>& Tensor::grad_fn() const { check_defined(); return impl_->grad_fn_; }
void Tensor::set_grad_fn(std::shared_ptr<AutogradNode> node) const { check_defined(); impl_->grad_fn_ = std::move(node); }
Tensor Tensor::detach() const { return make_view(*this, shape(), strides(), offset()); }

// ---- factories ----
Tensor empty(const Shape& shape, DType dtype, Device device) {
  for (int64_t d : shape) HT_CHECK(d >= 0, "empty: negative size in shape {}", shape_str(shape));
  auto storage = Storage::allocate(static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype), device);
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), dtype, shape, contiguous_strides(shape), 0));
}

Tensor full(const Shape& shape, double value, DType dtype, Device device) {
  if constexpr (cuda::kBuilt) {
    if (device.is_cuda()) {
      Tensor out = empty(shape, dtype, device);
      cuda::fill_tensor(out, value);
      return out;
    }
  }
  Tensor out = empty(shape, dtype, Device::cpu());
  HT_DISPATCH_ALL(dtype, [&] {
    std::fill_n(out.data<scalar_t>(), out.numel(), from_double<scalar_t>(value));
  });
  return device.is_cpu() ? out : out.to(device);
}

Tensor zeros(const Shape& shape, DType dtype, Device device) { return full(shape, 0.0, dtype, device); }
Tensor ones(const Shape& shape, DType dtype, Device device) { return full(shape, 1.0, dtype, device); }

Tensor arange(double start, double end, double step, DType dtype, Device device) {
  HT_CHECK(step != 0, "arange: step must not be 0");
  const int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((end - start) / step)));
  Tensor out = empty({n}, dtype, Device::cpu());
  HT_DISPATCH_ALL(dtype, [&] {
    scalar_t* p = out.data<scalar_t>();
    for (int64_t i = 0; i < n; ++i) p[i] = from_double<scalar_t>(start + static_cast<double>(i) * step);
  });
  return device.is_cpu() ? out : out.to(device);
}

Tensor from_blob(void* data, const Shape& shape, DType dtype, Device device, std::function<void(void*)> release) {
  auto storage = Storage::wrap(data, static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype), device, std::move(release));
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), dtype, shape, contiguous_strides(shape), 0));
}

std::vector<double> to_vector(const Tensor& tensor) {
  const Tensor t = tensor.device().is_cpu() ? tensor : tensor.to(Device::cpu());
  std::vector<double> out;
  out.reserve(static_cast<size_t>(t.numel()));
  HT_DISPATCH_ALL(t.dtype(), [&] {
    const scalar_t* base = static_cast<const scalar_t*>(t.storage()->data());
    for_each_row<1>(t.shape(), {t.strides()}, {t.offset()}, [&](auto off, int64_t n, auto step) {
      for (int64_t i = 0; i < n; ++i) out.push_back(to_double(base[off[0] + i * step[0]]));
    });
  });
  return out;
}

}  // namespace hetu
