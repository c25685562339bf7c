// The backward table: for each differentiable op and view, the gradients of its inputs
// given the gradient g of its output, written with the public ops. Each rule's comment
// states the SavedContext layout that lib/autograd/functions.cpp records for it.
// Accumulation rule: rules return fresh gradients; the engine sums them (+=) into leaves.
#include "lib/autograd/backward_rules.h"

#include <algorithm>
#include <array>

#include "lib/ops/ops.h"

namespace hetu::autograd {
namespace {

using Grads = std::vector<Tensor>;
using namespace hetu::ops;

// matmul: tensors {a, b}, ints {trans_a, trans_b}. out = op(a) op(b).
Grads matmul_backward(const SavedContext& c, const Tensor& g) {
  const Tensor& a = c.tensors[0];
  const Tensor& b = c.tensors[1];
  const bool ta = c.ints[0] != 0, tb = c.ints[1] != 0;
  Tensor da = ta ? matmul(b, g, tb, true) : matmul(g, b, false, !tb);
  Tensor db;
  if (b.dim() == 2 && a.dim() > 2) {
    // A 2-d weight shared by every row: fold the batch into the rows (one GEMM).
    const Tensor a2 = a.reshape({-1, a.size(-1)});
    const Tensor g2 = g.reshape({-1, g.size(-1)});
    if (ta) {
      const Tensor at = a.transpose(-1, -2).reshape({-1, a.size(-2)});  // rows of op(a)
      db = tb ? matmul(g2, at, true, false) : matmul(at, g2, true, false);
    } else {
      db = tb ? matmul(g2, a2, true, false) : matmul(a2, g2, true, false);
    }
  } else {
    db = tb ? matmul(g, a, true, ta) : matmul(a, g, !ta, false);
  }
  return {sum_to_shape(da, a.shape()), sum_to_shape(db, b.shape())};
}

// linear: tensors {x rows (M, K), weight (N, K)}, ints {has bias}, shapes {x}. out = r + x Wᵀ + b:
// dx = g W, dW = gᵀ x, db = the column sums of g (M, N) (ops::linear_backward), dr = g.
Grads linear_rule(const SavedContext& c, const Tensor& g) {
  const Tensor& x = c.tensors[0];
  const Tensor& w = c.tensors[1];
  LinearGrads r = linear_backward(g.reshape({x.size(0), w.size(0)}), x, w, c.ints[0] != 0);
  return {r.dx.reshape(c.shapes[0]), std::move(r.dweight), std::move(r.dbias), g};
}

// linear_gelu: tensors {x, weight, pre-activation}, ints {has bias}. out = gelu(x Wᵀ + b).
Grads linear_gelu_rule(const SavedContext& c, const Tensor& g) {
  LinearGrads r = linear_gelu_backward(g, c.tensors[0], c.tensors[1], c.tensors[2], c.ints[0] != 0);
  return {r.dx, r.dweight, r.dbias};
}

// add / sub: shapes {a, b}.
Grads add_backward(const SavedContext& c, const Tensor& g) {
  return {sum_to_shape(g, c.shapes[0]), sum_to_shape(g, c.shapes[1])};
}
Grads sub_backward(const SavedContext& c, const Tensor& g) {
  return {sum_to_shape(g, c.shapes[0]), sum_to_shape(neg(g), c.shapes[1])};
}
// mul: tensors {a, b}.
Grads mul_backward(const SavedContext& c, const Tensor& g) {
  const Tensor& a = c.tensors[0];
  const Tensor& b = c.tensors[1];
  return {sum_to_shape(mul(g, b), a.shape()), sum_to_shape(mul(g, a), b.shape())};
}
// div: tensors {a, b}. d/da = g / b, d/db = -g a / b².
Grads div_backward(const SavedContext& c, const Tensor& g) {
  const Tensor& a = c.tensors[0];
  const Tensor& b = c.tensors[1];
  const Tensor g_over_b = div(g, b);
  return {sum_to_shape(g_over_b, a.shape()), sum_to_shape(neg(div(mul(g_over_b, a), b)), b.shape())};
}
// add_scalar: nothing. mul_scalar: reals {s}.
Grads add_scalar_backward(const SavedContext&, const Tensor& g) { return {g}; }
Grads mul_scalar_backward(const SavedContext& c, const Tensor& g) { return {mul_scalar(g, c.reals[0])}; }

// Unary rules: tensors {x, out}.
Grads neg_backward(const SavedContext&, const Tensor& g) { return {neg(g)}; }
Grads exp_backward(const SavedContext& c, const Tensor& g) { return {mul(g, c.tensors[1])}; }
Grads log_backward(const SavedContext& c, const Tensor& g) { return {div(g, c.tensors[0])}; }
Grads sqrt_backward(const SavedContext& c, const Tensor& g) { return {div(mul_scalar(g, 0.5), c.tensors[1])}; }
Grads rsqrt_backward(const SavedContext& c, const Tensor& g) {  // d x^-1/2 = -1/2 x^-3/2 = -1/2 out³
  const Tensor& y = c.tensors[1];
  return {mul(mul_scalar(g, -0.5), mul(y, mul(y, y)))};
}
Grads tanh_backward(const SavedContext& c, const Tensor& g) {  // 1 - out²
  const Tensor& y = c.tensors[1];
  return {mul(g, add_scalar(neg(mul(y, y)), 1.0))};
}
Grads gelu_rule(const SavedContext& c, const Tensor& g) { return {gelu_backward(g, c.tensors[0])}; }
Grads silu_rule(const SavedContext& c, const Tensor& g) { return {silu_backward(g, c.tensors[0])}; }
Grads relu_rule(const SavedContext& c, const Tensor& g) { return {relu_backward(g, c.tensors[0])}; }
Grads softmax_rule(const SavedContext& c, const Tensor& g) { return {softmax_backward(g, c.tensors[1])}; }
Grads log_softmax_rule(const SavedContext& c, const Tensor& g) { return {log_softmax_backward(g, c.tensors[1])}; }

// sum / mean: shapes {input, kept (reduced dims as 1)}, reals {scale}.
Grads sum_backward(const SavedContext& c, const Tensor& g) {
  Tensor spread = g.reshape(c.shapes[1]).expand(c.shapes[0]).contiguous();
  return {c.reals[0] == 1.0 ? spread : mul_scalar(spread, c.reals[0])};
}
// max: tensors {argmax}, ints {dim}, shapes {input}.
Grads max_rule(const SavedContext& c, const Tensor& g) {
  return {max_backward(g, c.tensors[0], c.ints[0], c.shapes[0])};
}

// layer_norm: tensors {x, weight, mean, rstd}.
Grads layer_norm_rule(const SavedContext& c, const Tensor& g) {
  LayerNormGrads r = layer_norm_backward(g, c.tensors[0], c.tensors[1], c.tensors[2], c.tensors[3]);
  return {r.dx, r.dweight, r.dbias};
}
// rms_norm: tensors {x, weight, rstd}.
Grads rms_norm_rule(const SavedContext& c, const Tensor& g) {
  RmsNormGrads r = rms_norm_backward(g, c.tensors[0], c.tensors[1], c.tensors[2]);
  return {r.dx, r.dweight};
}
// embedding: tensors {ids}, ints {rows}. Only the weight gets a gradient.
Grads embedding_rule(const SavedContext& c, const Tensor& g) {
  return {embedding_backward(g, c.tensors[0], c.ints[0])};
}
// Its sparse form: into += embedding_rule's gradient, touching only the rows of the ids.
void embedding_accumulate(const SavedContext& c, const Tensor& g, const Tensor& into) {
  embedding_backward_add_(into, g, c.tensors[0]);
}
// rotary: ints {position_offset}, reals = the D/2 frequencies. A rotation's transpose is its inverse.
Grads rotary_rule(const SavedContext& c, const Tensor& g) {
  return {rotary(g, c.ints[0], c.reals, /*inverse=*/true)};
}
// rotary_positions: ints = the B·T positions, reals = the D/2 frequencies.
Grads rotary_positions_rule(const SavedContext& c, const Tensor& g) {
  return {rotary(g, std::span<const int64_t>(c.ints), c.reals, /*inverse=*/true)};
}
// attention: tensors {q, k, v, out, lse}, ints {cu_seqlens} (empty: one document per row), reals {scale}.
Grads attention_rule(const SavedContext& c, const Tensor& g) {
  AttentionGrads r = attention_backward(g, c.tensors[0], c.tensors[1], c.tensors[2], c.tensors[3], c.tensors[4],
                                        c.reals[0], c.ints);
  return {r.dq, r.dk, r.dv};
}
// attention_recompute (selective recomputation): tensors {q, k, v}, ints, reals as attention's;
// out and lse come from the forward rerun, bit for bit the ones attention_rule keeps.
Grads attention_recompute_rule(const SavedContext& c, const Tensor& g) {
  const AttentionResult f = attention(c.tensors[0], c.tensors[1], c.tensors[2], c.reals[0], c.ints);
  AttentionGrads r = attention_backward(g, c.tensors[0], c.tensors[1], c.tensors[2], f.out, f.lse, c.reals[0], c.ints);
  return {r.dq, r.dk, r.dv};
}
// cross_entropy: tensors {logits, targets}, ints {ignore_index}, reals {1 / normalizer}.
Grads cross_entropy_rule(const SavedContext& c, const Tensor& g) {
  return {cross_entropy_backward(c.tensors[0], c.tensors[1], g.item() * c.reals[0], c.ints[0])};
}
// linear_cross_entropy: tensors {dhidden, dweight}, computed with the loss for a gradient of 1.
Grads linear_cross_entropy_rule(const SavedContext& c, const Tensor& g) {
  const double scale = g.item();
  if (scale == 1.0) return {c.tensors[0], c.tensors[1]};  // the usual seed: no pass over dweight
  return {mul_scalar(c.tensors[0], scale), mul_scalar(c.tensors[1], scale)};
}
// concat: ints {dim, size of input 0, size of input 1, ...}.
Grads concat_rule(const SavedContext& c, const Tensor& g) {
  Grads grads;
  int64_t start = 0;
  for (size_t i = 1; i < c.ints.size(); ++i) {
    grads.push_back(g.narrow(c.ints[0], start, c.ints[i]).contiguous());
    start += c.ints[i];
  }
  return grads;
}
// split / narrow: ints {dim, start}, shapes {input}. The slice's gradient, zeros elsewhere (the
// reference; the engine writes into the input's gradient directly when it can, Note [Slice gradients]).
Grads narrow_rule(const SavedContext& c, const Tensor& g) {
  Tensor dx = zeros(c.shapes[0], g.dtype(), g.device());
  copy_(dx.narrow(c.ints[0], c.ints[1], g.size(c.ints[0])), g);
  return {dx};
}
// index_select: tensors {index}, ints {dim}, shapes {input}.
Grads index_select_rule(const SavedContext& c, const Tensor& g) {
  return {index_select_backward(g, c.ints[0], c.tensors[0], c.shapes[0])};
}
// cast: ints {input dtype}.
Grads cast_rule(const SavedContext& c, const Tensor& g) { return {cast(g, static_cast<DType>(c.ints[0]))}; }

// Views. reshape (also squeeze/unsqueeze): shapes {input}.
Grads reshape_rule(const SavedContext& c, const Tensor& g) { return {g.reshape(c.shapes[0])}; }
// transpose: ints {a, b}.
Grads transpose_rule(const SavedContext& c, const Tensor& g) { return {g.transpose(c.ints[0], c.ints[1])}; }
// permute: ints {order...}; the gradient goes through the inverse permutation.
Grads permute_rule(const SavedContext& c, const Tensor& g) {
  std::vector<int64_t> inverse(c.ints.size());
  for (size_t i = 0; i < c.ints.size(); ++i) {
    inverse[static_cast<size_t>(wrap_dim(c.ints[i], static_cast<int64_t>(c.ints.size())))] = static_cast<int64_t>(i);
  }
  return {g.permute(inverse)};
}
// expand: shapes {input}.
Grads expand_rule(const SavedContext& c, const Tensor& g) { return {sum_to_shape(g, c.shapes[0])}; }
Grads contiguous_rule(const SavedContext&, const Tensor& g) { return {g}; }

constexpr auto kRules = std::to_array<BackwardRule>({
    {"matmul", matmul_backward},
    {"linear", linear_rule},
    {"linear_gelu", linear_gelu_rule},
    {"add", add_backward},
    {"sub", sub_backward},
    {"mul", mul_backward},
    {"div", div_backward},
    {"add_scalar", add_scalar_backward},
    {"mul_scalar", mul_scalar_backward},
    {"neg", neg_backward},
    {"exp", exp_backward},
    {"log", log_backward},
    {"sqrt", sqrt_backward},
    {"rsqrt", rsqrt_backward},
    {"tanh", tanh_backward},
    {"gelu", gelu_rule},
    {"silu", silu_rule},
    {"relu", relu_rule},
    {"sum", sum_backward},
    {"mean", sum_backward},
    {"max", max_rule},
    {"softmax", softmax_rule},
    {"log_softmax", log_softmax_rule},
    {"layer_norm", layer_norm_rule},
    {"rms_norm", rms_norm_rule},
    {"embedding", embedding_rule, /*slice_view=*/false, embedding_accumulate},
    {"rotary", rotary_rule},
    {"rotary_positions", rotary_positions_rule},
    {"attention", attention_rule},
    {"attention_recompute", attention_recompute_rule},
    {"cross_entropy", cross_entropy_rule},
    {"linear_cross_entropy", linear_cross_entropy_rule},
    {"concat", concat_rule},
    {"split", narrow_rule, /*slice_view=*/true},
    {"index_select", index_select_rule},
    {"cast", cast_rule},
    {"reshape", reshape_rule},
    {"transpose", transpose_rule},
    {"permute", permute_rule},
    {"narrow", narrow_rule, /*slice_view=*/true},
    {"expand", expand_rule},
    {"contiguous", contiguous_rule},
});

}  // namespace

std::span<const BackwardRule> backward_rules() { return kRules; }

const BackwardRule& find_rule(std::string_view name) {
  for (const BackwardRule& rule : kRules) {
    if (rule.name == name) return rule;
  }
  HT_THROW("autograd: no backward rule named {}", name);
}

}  // namespace hetu::autograd
