// CPU f16 (lib/ops/f16_storage.h): every op GPT-2 and LLaMA train with, given f16 tensors,
// returns exactly the f32 op's result on the same values rounded once to f16 (round to
// nearest even): the f32 reference is the same op on the inputs widened by the test, its
// outputs rounded by the test. Statistics and losses come back f32, unrounded. A kernel that
// rounded an intermediate to f16, skipped the final rounding or returned f32 would fail.
#include <cmath>

#include "lib/ops/ops.h"
#include "tests/ops/op_test_utils.h"

using namespace hetu;
using namespace hetu::test;

namespace {

// Random values that f16 holds exactly, as an f16 tensor.
Tensor f16_values(const Shape& shape, uint64_t seed, double low = -1.0, double high = 1.0) {
  return random_tensor(shape, DType::f32, seed, low, high).to(DType::f16);
}

Tensor wide(const Tensor& t) { return t.to(DType::f32); }

// `got` is f16 and holds `reference` (f32) rounded to f16, element for element.
void check_rounded(const Tensor& got, const Tensor& reference) {
  REQUIRE(got.defined());
  CHECK(got.dtype() == DType::f16);
  REQUIRE(got.shape() == reference.shape());
  CHECK(to_vector(got) == to_vector(reference.to(DType::f16)));
}

// `got` is the f32 reference itself (a statistic or a loss).
void check_f32(const Tensor& got, const Tensor& reference) {
  CHECK(got.dtype() == DType::f32);
  CHECK(to_vector(got) == to_vector(reference));
}

}  // namespace

TEST_CASE("f16 elementwise, activation, reduction and softmax ops are the f32 ops rounded once", "[f16]") {
  const Tensor a = f16_values({3, 5, 7}, 1), b = f16_values({5, 7}, 2), g = f16_values({3, 5, 7}, 3);
  const Tensor pos = f16_values({3, 5, 7}, 4, 0.5, 2.0);
  check_rounded(ops::add(a, b), ops::add(wide(a), wide(b)));
  check_rounded(ops::sub(a, b), ops::sub(wide(a), wide(b)));
  check_rounded(ops::mul(a, b), ops::mul(wide(a), wide(b)));
  check_rounded(ops::div(a, pos), ops::div(wide(a), wide(pos)));
  check_rounded(ops::add_scalar(a, 0.3), ops::add_scalar(wide(a), 0.3));
  check_rounded(ops::mul_scalar(a, 0.3), ops::mul_scalar(wide(a), 0.3));
  check_rounded(ops::exp(a), ops::exp(wide(a)));
  check_rounded(ops::rsqrt(pos), ops::rsqrt(wide(pos)));
  check_rounded(ops::tanh(a), ops::tanh(wide(a)));
  check_rounded(ops::relu(a), ops::relu(wide(a)));
  check_rounded(ops::relu_backward(g, a), ops::relu_backward(wide(g), wide(a)));
  check_rounded(ops::gelu(a), ops::gelu(wide(a)));
  check_rounded(ops::gelu_backward(g, a), ops::gelu_backward(wide(g), wide(a)));
  check_rounded(ops::silu(a), ops::silu(wide(a)));
  check_rounded(ops::silu_backward(g, a), ops::silu_backward(wide(g), wide(a)));
  check_rounded(ops::sum(a, {1}), ops::sum(wide(a), {1}));
  check_rounded(ops::mean(a, {0, 2}), ops::mean(wide(a), {0, 2}));
  check_rounded(ops::softmax(a), ops::softmax(wide(a)));
  check_rounded(ops::log_softmax(a), ops::log_softmax(wide(a)));
  const Tensor y = ops::softmax(wide(a));
  check_rounded(ops::softmax_backward(g, y.to(DType::f16)), ops::softmax_backward(wide(g), wide(y.to(DType::f16))));
  // add_ in place: the sum in f32, rounded once into the f16 destination.
  const Tensor dst = a.clone();
  ops::add_(dst, b);
  check_rounded(dst, ops::add(wide(a), wide(b)));
}

TEST_CASE("f16 linear layers (matmul, linear, their backward, linear_gelu) are the f32 ops rounded once", "[f16]") {
  const Tensor x = f16_values({2, 6, 16}, 10), w = f16_values({12, 16}, 11), bias = f16_values({12}, 12);
  const Tensor residual = f16_values({2, 6, 12}, 13), grad = f16_values({12, 12}, 14);
  check_rounded(ops::matmul(x, w, false, true), ops::matmul(wide(x), wide(w), false, true));
  check_rounded(ops::linear(x, w, bias, residual), ops::linear(wide(x), wide(w), wide(bias), wide(residual)));
  const Tensor x2 = x.view({12, 16});
  const ops::LinearGrads got = ops::linear_backward(grad, x2, w, true);
  const ops::LinearGrads ref = ops::linear_backward(wide(grad), wide(x2), wide(w), true);
  check_rounded(got.dx, ref.dx);
  check_rounded(got.dweight, ref.dweight);
  check_rounded(got.dbias, ref.dbias);
  // linear_gelu keeps its pre-activation (f16, as stored for the backward) and applies gelu to it.
  const ops::LinearGeluResult fused = ops::linear_gelu(x, w, bias);
  check_rounded(fused.pre, ops::linear(wide(x), wide(w), wide(bias)));
  check_rounded(fused.out, ops::gelu(wide(fused.pre)));
  const Tensor g = f16_values({2, 6, 12}, 15);
  const ops::LinearGrads gg = ops::linear_gelu_backward(g, x, w, fused.pre, true);
  const ops::LinearGrads gr = ops::linear_gelu_backward(wide(g), wide(x), wide(w), wide(fused.pre), true);
  check_rounded(gg.dx, gr.dx);
  check_rounded(gg.dweight, gr.dweight);
  check_rounded(gg.dbias, gr.dbias);
}

TEST_CASE("f16 norms keep f32 statistics and round their outputs once", "[f16]") {
  const Tensor x = f16_values({4, 3, 32}, 20), w = f16_values({32}, 21, 0.5, 1.5), b = f16_values({32}, 22);
  const Tensor g = f16_values({4, 3, 32}, 23);
  const ops::LayerNormResult ln = ops::layer_norm(x, w, b, 1e-5);
  const ops::LayerNormResult ln_ref = ops::layer_norm(wide(x), wide(w), wide(b), 1e-5);
  check_rounded(ln.out, ln_ref.out);
  check_f32(ln.mean, ln_ref.mean);
  check_f32(ln.rstd, ln_ref.rstd);
  const ops::LayerNormGrads lg = ops::layer_norm_backward(g, x, w, ln.mean, ln.rstd);
  const ops::LayerNormGrads lg_ref = ops::layer_norm_backward(wide(g), wide(x), wide(w), ln_ref.mean, ln_ref.rstd);
  check_rounded(lg.dx, lg_ref.dx);
  check_rounded(lg.dweight, lg_ref.dweight);
  check_rounded(lg.dbias, lg_ref.dbias);
  const ops::RmsNormResult rn = ops::rms_norm(x, w, 1e-6);
  const ops::RmsNormResult rn_ref = ops::rms_norm(wide(x), wide(w), 1e-6);
  check_rounded(rn.out, rn_ref.out);
  check_f32(rn.rstd, rn_ref.rstd);
  const ops::RmsNormGrads rg = ops::rms_norm_backward(g, x, w, rn.rstd);
  const ops::RmsNormGrads rg_ref = ops::rms_norm_backward(wide(g), wide(x), wide(w), rn_ref.rstd);
  check_rounded(rg.dx, rg_ref.dx);
  check_rounded(rg.dweight, rg_ref.dweight);
}

TEST_CASE("f16 attention, rotary and embeddings are the f32 ops rounded once with an f32 lse", "[f16]") {
  const Tensor q = f16_values({2, 4, 8, 16}, 30), k = f16_values({2, 2, 8, 16}, 31), v = f16_values({2, 2, 8, 16}, 32);
  const double scale = 0.25;
  const ops::AttentionResult at = ops::attention(q, k, v, scale);
  const ops::AttentionResult at_ref = ops::attention(wide(q), wide(k), wide(v), scale);
  check_rounded(at.out, at_ref.out);
  check_f32(at.lse, at_ref.lse);
  const Tensor dout = f16_values({2, 4, 8, 16}, 33);
  const ops::AttentionGrads ag = ops::attention_backward(dout, q, k, v, at.out, at.lse, scale);
  const ops::AttentionGrads ag_ref =
      ops::attention_backward(wide(dout), wide(q), wide(k), wide(v), wide(at.out), at.lse, scale);
  check_rounded(ag.dq, ag_ref.dq);
  check_rounded(ag.dk, ag_ref.dk);
  check_rounded(ag.dv, ag_ref.dv);

  const Tensor x = f16_values({2, 8, 4, 16}, 34);
  const std::vector<double> freq = ops::rotary_frequencies(16, 10000.0);
  check_rounded(ops::rotary(x, 3, freq), ops::rotary(wide(x), 3, freq));

  const Tensor table = f16_values({11, 8}, 35);
  const Tensor ids = tensor_from<int64_t>({3, 0, 10, 3, 7, 3}, {2, 3});
  check_rounded(ops::embedding(table, ids), ops::embedding(wide(table), ids));
  const Tensor rows = f16_values({2, 3, 8}, 36);
  check_rounded(ops::embedding_backward(rows, ids, 11), ops::embedding_backward(wide(rows), ids, 11));
  const Tensor into = f16_values({11, 8}, 37), into_ref = wide(into);
  ops::embedding_backward_add_(into, rows, ids);
  ops::embedding_backward_add_(into_ref, wide(rows), ids);
  check_rounded(into, into_ref);
  const Tensor index = tensor_from<int64_t>({2, 0, 2}, {3});
  check_rounded(ops::index_select(table, 0, index), ops::index_select(wide(table), 0, index));
}

TEST_CASE("f16 losses are f32 and their logit gradients are rounded once", "[f16]") {
  const Tensor logits = f16_values({6, 19}, 40, -3, 3);
  const Tensor targets = tensor_from<int64_t>({1, 18, -100, 0, 7, 7}, {6});
  int64_t count = 0;
  check_f32(ops::cross_entropy_sum(logits, targets, -100, &count), ops::cross_entropy_sum(wide(logits), targets));
  CHECK(count == 5);
  check_rounded(ops::cross_entropy_backward(logits, targets, 0.2), ops::cross_entropy_backward(wide(logits), targets, 0.2));

  const Tensor hidden = f16_values({6, 16}, 41), weight = f16_values({19, 16}, 42);
  ops::LinearCrossEntropyOptions o;
  o.normalizer = 5.0 / 65536;  // fp16's loss scale folded into the normalizer (Note [Loss scale])
  const ops::LinearCrossEntropyResult lce = ops::linear_cross_entropy(hidden, weight, targets, o);
  const ops::LinearCrossEntropyResult lce_ref = ops::linear_cross_entropy(wide(hidden), wide(weight), targets, o);
  check_f32(lce.loss, lce_ref.loss);
  check_rounded(lce.dhidden, lce_ref.dhidden);
  check_rounded(lce.dweight, lce_ref.dweight);
  // The scaled loss: a normalizer below 1 divides, it is not clamped to 1.
  ops::LinearCrossEntropyOptions unscaled;
  unscaled.normalizer = 5.0;
  const double plain = ops::linear_cross_entropy(wide(hidden), wide(weight), targets, unscaled).loss.item();
  CHECK(lce_ref.loss.item() == Approx(plain * 65536).epsilon(1e-6));
}
