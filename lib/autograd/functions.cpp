// Differentiable ops: run the forward op, then record what its backward rule needs.
// The SavedContext layout each rule expects is stated next to the rule in backward_rules.cpp.
#include "lib/autograd/functions.h"

#include <algorithm>

#include "lib/autograd/recompute.h"

namespace hetu::autograd {
namespace {

bool needs_tape(std::initializer_list<const Tensor*> inputs) {
  if (!grad_enabled()) return false;
  for (const Tensor* t : inputs) {
    if (t->defined() && t->requires_grad()) return true;
  }
  return false;
}

// Unary ops whose rule reads (input, output).
Tensor unary(std::string_view name, const Tensor& x, Tensor (*fn)(const Tensor&)) {
  Tensor out = fn(x);
  if (!needs_tape({&x})) return out;
  return record(name, {&x}, out, {{x, out.detach()}, {}, {}, {}});
}

// The shape of a reduction over `dims` with keepdim (empty dims: every dim).
Shape kept_shape(const Shape& shape, const std::vector<int64_t>& dims) {
  Shape kept = shape;
  const int64_t nd = static_cast<int64_t>(shape.size());
  if (dims.empty()) std::fill(kept.begin(), kept.end(), 1);
  for (int64_t d : dims) kept[static_cast<size_t>(wrap_dim(d, nd))] = 1;
  return kept;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  Tensor out = ops::matmul(a, b, trans_a, trans_b);
  if (!needs_tape({&a, &b})) return out;
  return record("matmul", {&a, &b}, out, {{a.detach(), b.detach()}, {trans_a, trans_b}, {}, {}});
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual) {
  Tensor out = ops::linear(x, weight, bias, residual);
  if (!needs_tape({&x, &weight, &bias, &residual})) return out;
  const Tensor rows = x.contiguous().view({shape_numel(Shape(x.shape().begin(), x.shape().end() - 1)), x.size(-1)});
  return record("linear", {&x, &weight, &bias, &residual}, out,
                {{rows.detach(), weight.detach()}, {bias.defined() ? 1 : 0}, {}, {x.shape()}});
}

Tensor linear_gelu(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  ops::LinearGeluResult r = ops::linear_gelu(x, weight, bias);
  if (!needs_tape({&x, &weight, &bias})) return r.out;
  return record("linear_gelu", {&x, &weight, &bias}, r.out,
                {{x.detach(), weight.detach(), r.pre}, {bias.defined() ? 1 : 0}, {}, {}});
}

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor out = ops::add(a, b);
  if (!needs_tape({&a, &b})) return out;
  return record("add", {&a, &b}, out, {{}, {}, {}, {a.shape(), b.shape()}});
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor out = ops::sub(a, b);
  if (!needs_tape({&a, &b})) return out;
  return record("sub", {&a, &b}, out, {{}, {}, {}, {a.shape(), b.shape()}});
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = ops::mul(a, b);
  if (!needs_tape({&a, &b})) return out;
  return record("mul", {&a, &b}, out, {{a.detach(), b.detach()}, {}, {}, {}});
}

Tensor div(const Tensor& a, const Tensor& b) {
  Tensor out = ops::div(a, b);
  if (!needs_tape({&a, &b})) return out;
  return record("div", {&a, &b}, out, {{a.detach(), b.detach()}, {}, {}, {}});
}

Tensor add_scalar(const Tensor& a, double s) {
  Tensor out = ops::add_scalar(a, s);
  if (!needs_tape({&a})) return out;
  return record("add_scalar", {&a}, out, {});
}

Tensor mul_scalar(const Tensor& a, double s) {
  Tensor out = ops::mul_scalar(a, s);
  if (!needs_tape({&a})) return out;
  return record("mul_scalar", {&a}, out, {{}, {}, {s}, {}});
}

Tensor neg(const Tensor& x) { return unary("neg", x, ops::neg); }
Tensor exp(const Tensor& x) { return unary("exp", x, ops::exp); }
Tensor log(const Tensor& x) { return unary("log", x, ops::log); }
Tensor sqrt(const Tensor& x) { return unary("sqrt", x, ops::sqrt); }
Tensor rsqrt(const Tensor& x) { return unary("rsqrt", x, ops::rsqrt); }
Tensor tanh(const Tensor& x) { return unary("tanh", x, ops::tanh); }
Tensor gelu(const Tensor& x) { return unary("gelu", x, ops::gelu); }
Tensor silu(const Tensor& x) { return unary("silu", x, ops::silu); }
Tensor relu(const Tensor& x) { return unary("relu", x, ops::relu); }
Tensor softmax(const Tensor& x) { return unary("softmax", x, ops::softmax); }
Tensor log_softmax(const Tensor& x) { return unary("log_softmax", x, ops::log_softmax); }

Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  Tensor out = ops::sum(x, dims, keepdim);
  if (!needs_tape({&x})) return out;
  return record("sum", {&x}, out, {{}, {}, {1.0}, {x.shape(), kept_shape(x.shape(), dims)}});
}

Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  Tensor out = ops::mean(x, dims, keepdim);
  if (!needs_tape({&x})) return out;
  const Shape kept = kept_shape(x.shape(), dims);
  const double count = static_cast<double>(x.numel()) / static_cast<double>(std::max<int64_t>(shape_numel(kept), 1));
  return record("mean", {&x}, out, {{}, {}, {1.0 / count}, {x.shape(), kept}});
}

Tensor max(const Tensor& x, int64_t dim, bool keepdim) {
  Tensor argmax;
  Tensor out = ops::max(x, dim, keepdim, &argmax);
  if (!needs_tape({&x})) return out;
  return record("max", {&x}, out, {{argmax}, {dim}, {}, {x.shape()}});
}

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  ops::LayerNormResult r = ops::layer_norm(x, weight, bias, eps);
  if (!needs_tape({&x, &weight, &bias})) return r.out;
  return record("layer_norm", {&x, &weight, &bias}, r.out, {{x.detach(), weight.detach(), r.mean, r.rstd}, {}, {}, {}});
}

Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps) {
  ops::RmsNormResult r = ops::rms_norm(x, weight, eps);
  if (!needs_tape({&x, &weight})) return r.out;
  return record("rms_norm", {&x, &weight}, r.out, {{x.detach(), weight.detach(), r.rstd}, {}, {}, {}});
}

Tensor embedding(const Tensor& weight, const Tensor& ids) {
  Tensor out = ops::embedding(weight, ids);
  if (!needs_tape({&weight})) return out;
  return record("embedding", {&weight}, out, {{ids}, {weight.size(0)}, {}, {}});
}

Tensor rotary(const Tensor& x, int64_t position_offset, std::span<const double> inv_freq) {
  Tensor out = ops::rotary(x, position_offset, inv_freq);
  if (!needs_tape({&x})) return out;
  return record("rotary", {&x}, out, {{}, {position_offset}, {inv_freq.begin(), inv_freq.end()}, {}});
}

Tensor rotary(const Tensor& x, std::span<const int64_t> positions, std::span<const double> inv_freq) {
  Tensor out = ops::rotary(x, positions, inv_freq);
  if (!needs_tape({&x})) return out;
  return record("rotary_positions", {&x}, out,
                {{}, {positions.begin(), positions.end()}, {inv_freq.begin(), inv_freq.end()}, {}});
}

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, double scale,
                 std::span<const int64_t> cu_seqlens) {
  ops::AttentionResult r = ops::attention(q, k, v, scale, cu_seqlens);
  if (!needs_tape({&q, &k, &v})) return r.out;
  if (selective_recompute()) {  // out and lse are recomputed in backward (recompute.h)
    return record("attention_recompute", {&q, &k, &v}, r.out,
                  {{q.detach(), k.detach(), v.detach()}, {cu_seqlens.begin(), cu_seqlens.end()}, {scale}, {}});
  }
  return record("attention", {&q, &k, &v}, r.out,
                {{q.detach(), k.detach(), v.detach(), r.out.detach(), r.lse},
                 {cu_seqlens.begin(), cu_seqlens.end()},
                 {scale},
                 {}});
}

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index, double normalizer) {
  int64_t count = 0;
  Tensor total = ops::cross_entropy_sum(logits, targets, ignore_index, &count);
  const double scale = 1.0 / (normalizer > 0 ? normalizer : static_cast<double>(std::max<int64_t>(count, 1)));
  Tensor out = ops::mul_scalar(total, scale);
  if (!needs_tape({&logits})) return out;
  return record("cross_entropy", {&logits}, out, {{logits.detach(), targets}, {ignore_index}, {scale}, {}});
}

Tensor linear_cross_entropy(const Tensor& hidden, const Tensor& weight, const Tensor& targets, int64_t vocab,
                            int64_t ignore_index, double normalizer) {
  const bool grads = needs_tape({&hidden, &weight});
  ops::LinearCrossEntropyOptions options;
  options.vocab = vocab;
  options.ignore_index = ignore_index;
  options.normalizer = normalizer;
  options.grads = grads;
  ops::LinearCrossEntropyResult r = ops::linear_cross_entropy(hidden, weight, targets, options);
  if (!grads) return r.loss;
  return record("linear_cross_entropy", {&hidden, &weight}, r.loss, {{r.dhidden, r.dweight}, {}, {}, {}});
}

Tensor concat(const std::vector<Tensor>& tensors, int64_t dim) {
  Tensor out = ops::concat(tensors, dim);
  bool any = false;
  for (const Tensor& t : tensors) any = any || (grad_enabled() && t.requires_grad());
  if (!any) return out;
  // One node with an edge per input; the rule returns one slice of the gradient for each.
  SavedContext ctx{{}, {wrap_dim(dim, out.dim())}, {}, {}};
  for (const Tensor& t : tensors) ctx.ints.push_back(t.size(dim));
  std::vector<const Tensor*> inputs;
  for (const Tensor& t : tensors) inputs.push_back(&t);
  return record("concat", inputs, out, std::move(ctx));
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim) {
  std::vector<Tensor> pieces = ops::split(x, sizes, dim);
  if (!needs_tape({&x})) return pieces;
  int64_t start = 0;
  for (Tensor& piece : pieces) {
    const int64_t length = piece.size(dim);
    piece = record("split", {&x}, piece.detach(), {{}, {wrap_dim(dim, x.dim()), start}, {}, {x.shape()}});
    start += length;
  }
  return pieces;
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  std::vector<int64_t> sizes;
  for (const Tensor& piece : ops::chunk(x, chunks, dim)) sizes.push_back(piece.size(dim));
  return split(x, sizes, dim);
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  Tensor out = ops::index_select(x, dim, index);
  if (!needs_tape({&x})) return out;
  return record("index_select", {&x}, out, {{index}, {dim}, {}, {x.shape()}});
}

Tensor cast(const Tensor& x, DType dtype) {
  Tensor out = ops::cast(x, dtype);
  if (out.same(x) || !needs_tape({&x})) return out;
  return record("cast", {&x}, out, {{}, {static_cast<int64_t>(x.dtype())}, {}, {}});
}

// ---- views: the output shares storage; detach() gives it its own autograd state ----
Tensor reshape(const Tensor& x, const Shape& shape) {
  Tensor out = x.reshape(shape).detach();
  if (!needs_tape({&x})) return out;
  return record("reshape", {&x}, out, {{}, {}, {}, {x.shape()}});
}

Tensor transpose(const Tensor& x, int64_t a, int64_t b) {
  Tensor out = x.transpose(a, b).detach();
  if (!needs_tape({&x})) return out;
  return record("transpose", {&x}, out, {{}, {a, b}, {}, {}});
}

Tensor permute(const Tensor& x, const std::vector<int64_t>& order) {
  Tensor out = x.permute(order).detach();
  if (!needs_tape({&x})) return out;
  return record("permute", {&x}, out, {{}, order, {}, {}});
}

Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  Tensor out = x.narrow(dim, start, length).detach();
  if (!needs_tape({&x})) return out;
  return record("narrow", {&x}, out, {{}, {wrap_dim(dim, x.dim()), start}, {}, {x.shape()}});
}

Tensor expand(const Tensor& x, const Shape& shape) {
  Tensor out = x.expand(shape).detach();
  if (!needs_tape({&x})) return out;
  return record("expand", {&x}, out, {{}, {}, {}, {x.shape()}});
}

Tensor unsqueeze(const Tensor& x, int64_t dim) {
  Tensor out = x.unsqueeze(dim).detach();
  if (!needs_tape({&x})) return out;
  return record("reshape", {&x}, out, {{}, {}, {}, {x.shape()}});
}

Tensor squeeze(const Tensor& x, int64_t dim) {
  Tensor out = x.squeeze(dim).detach();
  if (!needs_tape({&x})) return out;
  return record("reshape", {&x}, out, {{}, {}, {}, {x.shape()}});
}

Tensor contiguous(const Tensor& x) {
  Tensor out = x.contiguous();
  if (out.same(x) || !needs_tape({&x})) return out;
  return record("contiguous", {&x}, out, {});
}

}  // namespace hetu::autograd
