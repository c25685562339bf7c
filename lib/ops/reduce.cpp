// Reductions: sum / mean over any set of dims, max over one dim, sum_to_shape. The reduced
// dims are permuted to the end so every kernel reduces contiguous rows; on the CPU, a sum
// over the leading dims of a contiguous tensor (a bias gradient: (B, T, C) -> (C)) instead
// adds whole rows into column sums, which needs no transposing copy.
#include <algorithm>

#include "lib/ops/cpu/reduce.h"
#include "lib/ops/cuda/reduce.h"
#include "lib/ops/op_checks.h"
#include "lib/ops/ops.h"
#include "lib/ops/f16_storage.h"

namespace hetu::ops {
namespace {

struct Plan {
  Tensor rows;       // contiguous, kept dims first, reduced dims last (columns: x as it is)
  int64_t inner = 1; // product of the reduced sizes
  Shape out_shape;   // with or without the reduced dims (keepdim)
  bool columns = false;  // rows is x, contiguous (inner, out numel): sum down the columns
};

// allow_columns: the caller can reduce a (reduced..., kept...) contiguous x by columns.
Plan plan_reduction(std::string_view op, const Tensor& x, const std::vector<int64_t>& dims, bool keepdim,
                    bool allow_columns = false) {
  const int64_t nd = x.dim();
  std::vector<bool> reduced(static_cast<size_t>(nd), dims.empty());
  for (int64_t d : dims) {
    const size_t w = static_cast<size_t>(wrap_dim(d, nd));
    HT_CHECK(!reduced[w] || dims.empty(), "{}: dim {} listed twice", op, d);
    reduced[w] = true;
  }
  std::vector<int64_t> order;
  Plan plan;
  for (int64_t d = 0; d < nd; ++d) {
    if (!reduced[static_cast<size_t>(d)]) order.push_back(d);
  }
  for (int64_t d = 0; d < nd; ++d) {
    const size_t du = static_cast<size_t>(d);
    if (reduced[du]) {
      order.push_back(d);
      plan.inner *= x.shape()[du];
      if (keepdim) plan.out_shape.push_back(1);
    } else {
      plan.out_shape.push_back(x.shape()[du]);
    }
  }
  // Reduced dims all before the kept ones (and at least one kept): columns of a contiguous x.
  bool leading = !dims.empty() && !reduced[static_cast<size_t>(nd - 1)];
  for (int64_t d = 1; d < nd && leading; ++d) {
    leading = reduced[static_cast<size_t>(d)] <= reduced[static_cast<size_t>(d - 1)];
  }
  if (allow_columns && leading && x.device().is_cpu() && x.is_contiguous()) {
    plan.rows = x;
    plan.columns = true;
    return plan;
  }
  plan.rows = x.permute(order).contiguous();
  return plan;
}

// out (outer) = scale · Σ rows (outer, inner): the CPU or CUDA kernel. A column plan has
// rows (inner, outer) instead: out = scale · Σ over its rows.
void sum_rows(const Plan& plan, double scale, const Tensor& out) {
  const Tensor& rows = plan.rows;
  const int64_t inner = plan.inner;
  if (plan.columns) {
    cpu::sum_columns(rows, inner, scale, out);
    return;
  }
  if constexpr (hetu::cuda::kBuilt) {
    if (out.device().is_cuda()) {
      hetu::cuda::DeviceGuard guard(out.device());
      cuda::sum_rows(out.dtype(), out.raw_data(), rows.raw_data(), out.numel(), inner, static_cast<float>(scale));
      return;
    }
  }
  cpu::sum_rows(rows, inner, scale, out);
}

}  // namespace

Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  if (stores_f16({&x})) return narrowed(sum(widened(x), dims, keepdim));
  check_inputs("sum", {&x}, Backends::cpu_and_cuda);
  check_float_dtype("sum", {&x});
  Plan plan = plan_reduction("sum", x, dims, keepdim, /*allow_columns=*/true);
  Tensor out = empty(plan.out_shape, x.dtype(), x.device());
  sum_rows(plan, 1.0, out);
  return out;
}

Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  if (stores_f16({&x})) return narrowed(mean(widened(x), dims, keepdim));
  check_inputs("mean", {&x}, Backends::cpu_and_cuda);
  check_float_dtype("mean", {&x});
  Plan plan = plan_reduction("mean", x, dims, keepdim, /*allow_columns=*/true);
  HT_CHECK(plan.inner > 0, "mean: reducing an empty dim of {}", shape_str(x.shape()));
  Tensor out = empty(plan.out_shape, x.dtype(), x.device());
  sum_rows(plan, 1.0 / static_cast<double>(plan.inner), out);
  return out;
}

Tensor max(const Tensor& x, int64_t dim, bool keepdim, Tensor* argmax) {
  if (stores_f16({&x})) return narrowed(max(widened(x), dim, keepdim, argmax));
  check_inputs("max", {&x}, Backends::cpu_and_cuda);
  check_float_dtype("max", {&x});
  HT_CHECK(x.dim() > 0 && x.size(dim) > 0, "max: dim {} of {} is empty", dim, shape_str(x.shape()));
  Plan plan = plan_reduction("max", x, {dim}, keepdim);
  Tensor out = empty(plan.out_shape, x.dtype(), x.device());
  Tensor index;
  if (argmax != nullptr) index = empty(plan.out_shape, DType::i64, x.device());
  if constexpr (hetu::cuda::kBuilt) {
    if (x.device().is_cuda()) {
      hetu::cuda::DeviceGuard guard(x.device());
      cuda::max_rows(x.dtype(), out.raw_data(), index.defined() ? index.data<int64_t>() : nullptr,
                     plan.rows.raw_data(), out.numel(), plan.inner);
      if (argmax != nullptr) *argmax = index;
      return out;
    }
  }
  cpu::max_rows(plan.rows, plan.inner, out, index);
  if (argmax != nullptr) *argmax = index;
  return out;
}

Tensor max_backward(const Tensor& grad, const Tensor& argmax, int64_t dim, const Shape& shape) {
  if (stores_f16({&grad})) return narrowed(max_backward(widened(grad), argmax, dim, shape));
  check_inputs("max_backward", {&grad, &argmax}, Backends::cpu_and_cuda);
  check_float_dtype("max_backward", {&grad});
  const int64_t nd = static_cast<int64_t>(shape.size());
  dim = wrap_dim(dim, nd);
  Shape kept = shape;
  kept[static_cast<size_t>(dim)] = 1;
  HT_CHECK(grad.numel() == shape_numel(kept) && argmax.numel() == grad.numel(),
           "max_backward: grad {} does not match input {} reduced over dim {}", shape_str(grad.shape()),
           shape_str(shape), dim);
  // Work in (outer, n, inner) coordinates of the input.
  const int64_t n = shape[static_cast<size_t>(dim)];
  int64_t inner = 1;
  for (int64_t d = dim + 1; d < nd; ++d) inner *= shape[static_cast<size_t>(d)];
  Tensor out = zeros(shape, grad.dtype(), grad.device());
  const Tensor g = grad.contiguous();
  const Tensor idx = argmax.contiguous();
  if constexpr (hetu::cuda::kBuilt) {
    if (grad.device().is_cuda()) {
      hetu::cuda::DeviceGuard guard(grad.device());
      cuda::max_backward(grad.dtype(), out.raw_data(), g.raw_data(), idx.data<int64_t>(), g.numel() / inner, n, inner);
      return out;
    }
  }
  const int64_t* pi = idx.data<int64_t>();
  HT_DISPATCH_FLOAT(grad.dtype(), "max_backward", grad.device(), [&] {
    const scalar_t* pg = g.data<scalar_t>();
    scalar_t* po = out.data<scalar_t>();
    for (int64_t r = 0; r < g.numel(); ++r) {
      const int64_t o = r / inner, i = r % inner;
      po[(o * n + pi[r]) * inner + i] = pg[r];
    }
  });
  return out;
}

Tensor sum_to_shape(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  HT_CHECK(broadcast_shapes(shape, x.shape()) == x.shape(), "sum_to_shape: {} does not broadcast to {}",
           shape_str(shape), shape_str(x.shape()));
  const size_t lead = x.shape().size() - shape.size();
  std::vector<int64_t> dims;
  for (size_t d = 0; d < x.shape().size(); ++d) {
    if (d < lead || (shape[d - lead] == 1 && x.shape()[d] != 1)) dims.push_back(static_cast<int64_t>(d));
  }
  if (dims.empty()) return x.reshape(shape);
  return sum(x, dims, /*keepdim=*/true).reshape(shape);
}

}  // namespace hetu::ops
