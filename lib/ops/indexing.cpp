// Public lookup ops: embedding and index_select with their scatter-add backward. Checks,
// index range validation (before any kernel runs, so errors name the bad index), then the
// shared row kernels of cpu/indexing.h.
//   embedding(weight (V, C), ids (B, T)) -> (B, T, C);  embedding_backward -> (V, C)
//   embedding_backward_add_(into (V, C), grad, ids): into += embedding_backward, in place
//   index_select(x (A, N, B), 1, index (K)) -> (A, K, B);  its backward -> (A, N, B)
#include "lib/ops/cpu/indexing.h"
#include "lib/ops/cuda/indexing.h"
#include "lib/ops/op_checks.h"
#include "lib/ops/ops.h"
#include "lib/ops/f16_storage.h"

namespace hetu::ops {
namespace {

int64_t wrap_op_dim(const char* op, int64_t dim, int64_t ndim) {
  HT_CHECK(dim >= -ndim && dim < ndim, "{}: dim {} out of range for a {}-d tensor", op, dim, ndim);
  return dim < 0 ? dim + ndim : dim;
}

// `index` contiguous; every entry must lie in [0, limit).
void check_index_range(const char* op, const char* what, const Tensor& index, int64_t limit) {
  if constexpr (hetu::cuda::kBuilt) {
    if (index.device().is_cuda()) {
      hetu::cuda::DeviceGuard guard(index.device());
      int64_t value = 0;
      const int64_t pos = cuda::first_out_of_range(index.dtype(), index.raw_data(), index.numel(), limit, &value);
      HT_CHECK(pos < 0, "{}: {} {} at position {} is outside [0, {})", op, what, value, pos, limit);
      return;
    }
  }
  HT_DISPATCH_INDEX(index.dtype(), op, index.device(), [&] {
    const scalar_t* p = index.data<scalar_t>();
    const int64_t pos = cpu::first_out_of_range(p, index.numel(), limit);
    HT_CHECK(pos < 0, "{}: {} {} at position {} is outside [0, {})", op, what, static_cast<int64_t>(p[pos]), pos,
             limit);
  });
}

// (outer, rows, inner) around `dim` of a shape.
struct RowView {
  int64_t outer = 1, rows = 1, inner = 1;
};
RowView row_view(const Shape& shape, int64_t dim) {
  RowView v;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    const int64_t n = shape[static_cast<size_t>(d)];
    if (d < dim) v.outer *= n;
    else if (d == dim) v.rows = n;
    else v.inner *= n;
  }
  return v;
}

void run_gather(const char* op, Tensor& out, const Tensor& src, const Tensor& index, const RowView& v) {
  if constexpr (hetu::cuda::kBuilt) {
    if (src.device().is_cuda()) {
      hetu::cuda::DeviceGuard guard(src.device());
      cuda::gather_rows(src.dtype(), index.dtype(), out.raw_data(), src.raw_data(), index.raw_data(), v.outer, v.rows,
                        index.numel(), v.inner);
      return;
    }
  }
  HT_DISPATCH_FLOAT(src.dtype(), op, src.device(), [&] {
    using value_t = scalar_t;
    HT_DISPATCH_INDEX(index.dtype(), op, index.device(), [&] {
      cpu::gather_rows(out.data<value_t>(), src.data<value_t>(), index.data<scalar_t>(), v.outer, v.rows,
                       index.numel(), v.inner);
    });
  });
}

void run_scatter_add(const char* op, Tensor& out, const Tensor& grad, const Tensor& index, const RowView& v) {
  if constexpr (hetu::cuda::kBuilt) {
    if (grad.device().is_cuda()) {
      hetu::cuda::DeviceGuard guard(grad.device());
      cuda::scatter_add_rows(grad.dtype(), index.dtype(), out.raw_data(), grad.raw_data(), index.raw_data(), v.outer,
                             v.rows, index.numel(), v.inner);
      return;
    }
  }
  HT_DISPATCH_FLOAT(grad.dtype(), op, grad.device(), [&] {
    using value_t = scalar_t;
    HT_DISPATCH_INDEX(index.dtype(), op, index.device(), [&] {
      cpu::scatter_add_rows(out.data<value_t>(), grad.data<value_t>(), index.data<scalar_t>(), v.outer, v.rows,
                            index.numel(), v.inner);
    });
  });
}

}  // namespace

Tensor embedding(const Tensor& weight_in, const Tensor& ids_in) {
  if (stores_f16({&weight_in})) return narrowed(embedding(widened(weight_in), ids_in));
  check_inputs("embedding", {&weight_in, &ids_in}, Backends::cpu_and_cuda);
  check_float_dtype("embedding", {&weight_in});
  check_index_dtype("embedding", ids_in);
  HT_CHECK(weight_in.dim() == 2, "embedding: weight must be (V, C), got shape {}", shape_str(weight_in.shape()));
  const Tensor weight = weight_in.contiguous();
  const Tensor ids = ids_in.contiguous();
  const int64_t num_rows = weight.size(0);
  check_index_range("embedding", "id", ids, num_rows);
  Shape out_shape = ids.shape();
  out_shape.push_back(weight.size(1));
  Tensor out = empty(out_shape, weight.dtype(), weight.device());
  run_gather("embedding", out, weight, ids, RowView{1, num_rows, weight.size(1)});
  return out;
}

Tensor embedding_backward(const Tensor& grad_in, const Tensor& ids_in, int64_t num_rows) {
  if (stores_f16({&grad_in})) return narrowed(embedding_backward(widened(grad_in), ids_in, num_rows));
  check_inputs("embedding_backward", {&grad_in, &ids_in}, Backends::cpu_and_cuda);
  check_float_dtype("embedding_backward", {&grad_in});
  check_index_dtype("embedding_backward", ids_in);
  HT_CHECK(num_rows >= 0, "embedding_backward: num_rows must be >= 0, got {}", num_rows);
  const Shape& gs = grad_in.shape();
  HT_CHECK(grad_in.dim() == ids_in.dim() + 1 && Shape(gs.begin(), gs.end() - 1) == ids_in.shape(),
           "embedding_backward: grad shape {} is not ids shape {} plus a channel dim", shape_str(gs),
           shape_str(ids_in.shape()));
  const Tensor grad = grad_in.contiguous();
  const Tensor ids = ids_in.contiguous();
  check_index_range("embedding_backward", "id", ids, num_rows);
  const int64_t channels = grad.size(-1);
  Tensor out = empty({num_rows, channels}, grad.dtype(), grad.device());
  run_scatter_add("embedding_backward", out, grad, ids, RowView{1, num_rows, channels});
  return out;
}

void embedding_backward_add_(const Tensor& into, const Tensor& grad_in, const Tensor& ids_in) {
  if (stores_f16({&into, &grad_in}) && into.dtype() == grad_in.dtype()) {  // the sums in f32, rounded into `into`
    const Tensor wide = widened(into);
    embedding_backward_add_(wide, widened(grad_in), ids_in);
    into.copy_from(wide);
    return;
  }
  check_inputs("embedding_backward_add_", {&into, &grad_in, &ids_in}, Backends::cpu_and_cuda);
  check_float_dtype("embedding_backward_add_", {&into, &grad_in});
  check_index_dtype("embedding_backward_add_", ids_in);
  const Shape& gs = grad_in.shape();
  HT_CHECK(into.dim() == 2 && into.is_contiguous() && grad_in.dim() == ids_in.dim() + 1 &&
               Shape(gs.begin(), gs.end() - 1) == ids_in.shape() && grad_in.size(-1) == into.size(1),
           "embedding_backward_add_: expected a contiguous (V, C) target, grad of ids shape {} plus C, got target {}, "
           "grad {}, ids {}", shape_str(ids_in.shape()), shape_str(into.shape()), shape_str(gs),
           shape_str(ids_in.shape()));
  if (into.device().is_cuda()) {  // no kernel of its own: the dense sum, the same bits
    add_(into, embedding_backward(grad_in, ids_in, into.size(0)));
    return;
  }
  const Tensor grad = grad_in.contiguous();
  const Tensor ids = ids_in.contiguous();
  check_index_range("embedding_backward_add_", "id", ids, into.size(0));
  HT_DISPATCH_FLOAT(grad.dtype(), "embedding_backward_add_", grad.device(), [&] {
    using value_t = scalar_t;
    HT_DISPATCH_INDEX(ids.dtype(), "embedding_backward_add_", ids.device(), [&] {
      cpu::scatter_add_rows_into(into.data<value_t>(), grad.data<value_t>(), ids.data<scalar_t>(), ids.numel(),
                                 into.size(1));
    });
  });
}

Tensor index_select(const Tensor& x_in, int64_t dim, const Tensor& index_in) {
  if (stores_f16({&x_in})) return narrowed(index_select(widened(x_in), dim, index_in));
  check_inputs("index_select", {&x_in, &index_in}, Backends::cpu_and_cuda);
  check_float_dtype("index_select", {&x_in});
  check_index_dtype("index_select", index_in);
  HT_CHECK(index_in.dim() == 1, "index_select: index must be 1-d, got shape {}", shape_str(index_in.shape()));
  dim = wrap_op_dim("index_select", dim, x_in.dim());
  const Tensor x = x_in.contiguous();
  const Tensor index = index_in.contiguous();
  const RowView v = row_view(x.shape(), dim);
  check_index_range("index_select", "index", index, v.rows);
  Shape out_shape = x.shape();
  out_shape[static_cast<size_t>(dim)] = index.numel();
  Tensor out = empty(out_shape, x.dtype(), x.device());
  run_gather("index_select", out, x, index, v);
  return out;
}

Tensor index_select_backward(const Tensor& grad_in, int64_t dim, const Tensor& index_in, const Shape& input_shape) {
  if (stores_f16({&grad_in})) return narrowed(index_select_backward(widened(grad_in), dim, index_in, input_shape));
  check_inputs("index_select_backward", {&grad_in, &index_in}, Backends::cpu_and_cuda);
  check_float_dtype("index_select_backward", {&grad_in});
  check_index_dtype("index_select_backward", index_in);
  HT_CHECK(index_in.dim() == 1, "index_select_backward: index must be 1-d, got shape {}",
           shape_str(index_in.shape()));
  for (int64_t n : input_shape) {
    HT_CHECK(n >= 0, "index_select_backward: negative size in input shape {}", shape_str(input_shape));
  }
  dim = wrap_op_dim("index_select_backward", dim, static_cast<int64_t>(input_shape.size()));
  Shape expected = input_shape;
  expected[static_cast<size_t>(dim)] = index_in.numel();
  HT_CHECK(grad_in.shape() == expected, "index_select_backward: grad shape {} does not match {} (input {} with {} "
           "indices along dim {})", shape_str(grad_in.shape()), shape_str(expected), shape_str(input_shape),
           index_in.numel(), dim);
  const Tensor grad = grad_in.contiguous();
  const Tensor index = index_in.contiguous();
  const RowView v = row_view(input_shape, dim);
  check_index_range("index_select_backward", "index", index, v.rows);
  Tensor out = empty(input_shape, grad.dtype(), grad.device());
  run_scatter_add("index_select_backward", out, grad, index, v);
  return out;
}

}  // namespace hetu::ops
