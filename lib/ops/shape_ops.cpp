// Shape ops: concat copies its inputs (any layouts, any one dtype) into a fresh contiguous
// tensor; split and chunk return views (Tensor::narrow) that share x's storage.
//   concat({(2, 3), (2, 5)}, 1) -> (2, 8);  split((7, 4), {2, 5}, 0) -> (2, 4), (5, 4)
//   chunk((7, 4), 3, 0) -> (3, 4), (3, 4), (1, 4)  (ceil-sized, as torch.chunk)
#include <algorithm>
#include <numeric>

#include "lib/ops/op_checks.h"
#include "lib/ops/ops.h"

namespace hetu::ops {
namespace {

int64_t wrap_op_dim(const char* op, int64_t dim, int64_t ndim) {
  HT_CHECK(dim >= -ndim && dim < ndim, "{}: dim {} out of range for a {}-d tensor", op, dim, ndim);
  return dim < 0 ? dim + ndim : dim;
}

}  // namespace

Tensor concat(const std::vector<Tensor>& tensors, int64_t dim) {
  HT_CHECK(!tensors.empty(), "concat: no tensors given");
  const Tensor& first = tensors.front();
  for (const Tensor& t : tensors) check_inputs("concat", {&first, &t}, Backends::cpu_and_cuda);
  dim = wrap_op_dim("concat", dim, first.dim());
  const size_t d = static_cast<size_t>(dim);
  Shape out_shape = first.shape();
  out_shape[d] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    HT_CHECK(t.dtype() == first.dtype(), "concat: tensor {} has dtype {}, tensor 0 has {}", i, to_string(t.dtype()),
             to_string(first.dtype()));
    bool match = t.dim() == first.dim();
    for (size_t k = 0; match && k < t.shape().size(); ++k) match = k == d || t.shape()[k] == first.shape()[k];
    HT_CHECK(match, "concat: tensor {} has shape {}, tensor 0 has {}; they may differ only in dim {}", i,
             shape_str(t.shape()), shape_str(first.shape()), dim);
    out_shape[d] += t.shape()[d];
  }
  // copy_from reads any strides, so non-contiguous inputs are copied once, not twice.
  Tensor out = empty(out_shape, first.dtype(), first.device());
  int64_t start = 0;
  for (const Tensor& t : tensors) {
    const int64_t n = t.shape()[d];
    out.narrow(dim, start, n).copy_from(t);
    start += n;
  }
  return out;
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim) {
  check_inputs("split", {&x}, Backends::cpu_and_cuda);
  dim = wrap_op_dim("split", dim, x.dim());
  const int64_t n = x.size(dim);
  for (int64_t s : sizes) HT_CHECK(s >= 0, "split: negative size in {}", shape_str(sizes));
  const int64_t total = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
  HT_CHECK(total == n, "split: sizes {} sum to {}, but dim {} has size {}", shape_str(sizes), total, dim, n);
  std::vector<Tensor> out;
  out.reserve(sizes.size());
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(x.narrow(dim, start, s));
    start += s;
  }
  return out;
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  check_inputs("chunk", {&x}, Backends::cpu_and_cuda);
  HT_CHECK(chunks >= 1, "chunk: chunks must be >= 1, got {}", chunks);
  dim = wrap_op_dim("chunk", dim, x.dim());
  const int64_t n = x.size(dim);
  if (n == 0) return split(x, std::vector<int64_t>(static_cast<size_t>(chunks), 0), dim);  // as torch
  const int64_t step = (n + chunks - 1) / chunks;  // may give fewer than `chunks` pieces, as torch
  std::vector<int64_t> sizes;
  for (int64_t start = 0; start < n; start += step) sizes.push_back(std::min(step, n - start));
  return split(x, sizes, dim);
}

}  // namespace hetu::ops
