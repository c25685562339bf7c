// Differentiable ops: the same names and arguments as lib/ops/ops.h, plus the views, but
// each records itself on the tape when an input requires grad. Models are written with
// these; the backward of each is one entry in backward_rules.cpp.
//
//   namespace ag = hetu::autograd;
//   Tensor h = ag::gelu(ag::matmul(x, w, false, true));
//   ag::backward(ag::mean(h));
#pragma once

#include <vector>

#include "lib/autograd/engine.h"
#include "lib/autograd/grad_mode.h"
#include "lib/ops/ops.h"

namespace hetu::autograd {

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);
// residual + x weightᵀ + bias; bias and residual may be undefined (ops::linear).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual = Tensor());
// gelu(linear(x, weight, bias)) as one node: its backward takes the GELU's derivative and the
// bias gradient in one pass (ops::linear_gelu_backward). bias may be undefined.
Tensor linear_gelu(const Tensor& x, const Tensor& weight, const Tensor& bias);
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor add_scalar(const Tensor& a, double s);
Tensor mul_scalar(const Tensor& a, double s);
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor gelu(const Tensor& x);
Tensor silu(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor sum(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor max(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor softmax(const Tensor& x);
Tensor log_softmax(const Tensor& x);
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps);
Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps);
Tensor embedding(const Tensor& weight, const Tensor& ids);
Tensor rotary(const Tensor& x, int64_t position_offset, std::span<const double> inv_freq);  // D/2 frequencies
Tensor rotary(const Tensor& x, std::span<const int64_t> positions, std::span<const double> inv_freq);  // B·T positions
// Causal attention (ops::attention), within the documents of cu_seqlens when given; the
// node keeps its own copy of the offsets for the backward.
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, double scale,
                 std::span<const int64_t> cu_seqlens = {});
// Σ cross-entropy over non-ignored tokens divided by `normalizer` (> 0); normalizer 0
// means "the number of non-ignored tokens here" (a plain mean).
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index = -100, double normalizer = 0);
// cross_entropy(hidden weightᵀ, targets) over the first `vocab` rows of weight (-1: all; the
// rest are padding) without the logits: ops::linear_cross_entropy, which computes both
// gradients with the loss; hidden (N, C), weight (V, C). The fused LM head.
Tensor linear_cross_entropy(const Tensor& hidden, const Tensor& weight, const Tensor& targets, int64_t vocab = -1,
                            int64_t ignore_index = -100, double normalizer = 0);
Tensor concat(const std::vector<Tensor>& tensors, int64_t dim);
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim);
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim);
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
Tensor cast(const Tensor& x, DType dtype);

// ---- differentiable views ----
Tensor reshape(const Tensor& x, const Shape& shape);
Tensor transpose(const Tensor& x, int64_t a, int64_t b);
Tensor permute(const Tensor& x, const std::vector<int64_t>& order);
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
Tensor expand(const Tensor& x, const Shape& shape);
Tensor unsqueeze(const Tensor& x, int64_t dim);
Tensor squeeze(const Tensor& x, int64_t dim);
Tensor contiguous(const Tensor& x);

}  // namespace hetu::autograd
