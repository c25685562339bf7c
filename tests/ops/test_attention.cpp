// Tests for ops::attention / ops::attention_backward against a naive double-precision
// reference written here, which DOES build the full (T, T) score matrix per head:
// S = q kᵀ·scale with j > t masked, P = softmax(S), out = P v, lse = log Σ exp(S).
// Gradients of L = Σ out ∘ G: dP = G vᵀ, dS = P ∘ (dP − rowsum(P ∘ dP)), dq = dS k·scale,
// dk = dSᵀ q·scale, dv = Pᵀ G (kv heads summing their query group), plus finite differences
// (also with documents, cu_seqlens; test_attention_documents.cpp has the rest of those).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "lib/ops/ops.h"
#include "op_test_utils.h"

namespace {

using hetu::DType;
using hetu::Shape;
using hetu::Tensor;
using hetu::test::Layout;
using Vec = std::vector<double>;

struct Dims {
  int64_t B, H, Hkv, T, D;
};

struct NaiveForward {
  Vec out, lse, probs;  // probs: (B, H, T, T), kept for the backward reference
};

NaiveForward naive_attention(const Vec& q, const Vec& k, const Vec& v, const Dims& d, double scale) {
  NaiveForward r{Vec(q.size(), 0.0), Vec(static_cast<size_t>(d.B * d.H * d.T)),
                 Vec(static_cast<size_t>(d.B * d.H * d.T * d.T), 0.0)};
  const int64_t group = d.H / d.Hkv;
  for (int64_t b = 0; b < d.B; ++b) {
    for (int64_t h = 0; h < d.H; ++h) {
      const size_t qh = static_cast<size_t>((b * d.H + h) * d.T * d.D);
      const size_t kh = static_cast<size_t>((b * d.Hkv + h / group) * d.T * d.D);
      Vec scores(static_cast<size_t>(d.T * d.T), -INFINITY);
      for (int64_t t = 0; t < d.T; ++t) {
        for (int64_t j = 0; j <= t; ++j) {
          double s = 0;
          for (int64_t x = 0; x < d.D; ++x)
            s += q[qh + static_cast<size_t>(t * d.D + x)] * k[kh + static_cast<size_t>(j * d.D + x)];
          scores[static_cast<size_t>(t * d.T + j)] = s * scale;
        }
      }
      for (int64_t t = 0; t < d.T; ++t) {
        const double* row = &scores[static_cast<size_t>(t * d.T)];
        const double m = *std::max_element(row, row + d.T);
        double sum = 0;
        for (int64_t j = 0; j < d.T; ++j) sum += std::exp(row[j] - m);
        const size_t bht = static_cast<size_t>((b * d.H + h) * d.T + t);
        r.lse[bht] = m + std::log(sum);
        for (int64_t j = 0; j < d.T; ++j) {
          const double p = std::exp(row[j] - m) / sum;
          r.probs[bht * static_cast<size_t>(d.T) + static_cast<size_t>(j)] = p;
          for (int64_t x = 0; x < d.D; ++x)
            r.out[qh + static_cast<size_t>(t * d.D + x)] += p * v[kh + static_cast<size_t>(j * d.D + x)];
        }
      }
    }
  }
  return r;
}

struct NaiveGrads {
  Vec dq, dk, dv;
};

NaiveGrads naive_attention_backward(const Vec& g, const Vec& q, const Vec& k, const Vec& v, const Vec& probs,
                                    const Dims& d, double scale) {
  NaiveGrads r{Vec(q.size(), 0.0), Vec(k.size(), 0.0), Vec(v.size(), 0.0)};
  const int64_t group = d.H / d.Hkv;
  const auto T = static_cast<size_t>(d.T), D = static_cast<size_t>(d.D);
  for (int64_t b = 0; b < d.B; ++b) {
    for (int64_t h = 0; h < d.H; ++h) {
      const size_t qh = static_cast<size_t>((b * d.H + h) * d.T * d.D);
      const size_t kh = static_cast<size_t>((b * d.Hkv + h / group) * d.T * d.D);
      const double* P = &probs[static_cast<size_t>((b * d.H + h) * d.T * d.T)];
      Vec dP(T * T, 0.0), dS(T * T, 0.0);
      for (size_t t = 0; t < T; ++t)
        for (size_t j = 0; j < T; ++j)
          for (size_t x = 0; x < D; ++x) dP[t * T + j] += g[qh + t * D + x] * v[kh + j * D + x];
      for (size_t t = 0; t < T; ++t) {
        double rowsum = 0;
        for (size_t j = 0; j < T; ++j) rowsum += P[t * T + j] * dP[t * T + j];
        for (size_t j = 0; j < T; ++j) dS[t * T + j] = P[t * T + j] * (dP[t * T + j] - rowsum);
      }
      for (size_t t = 0; t < T; ++t) {
        for (size_t j = 0; j < T; ++j) {
          for (size_t x = 0; x < D; ++x) {
            r.dq[qh + t * D + x] += dS[t * T + j] * k[kh + j * D + x] * scale;
            r.dk[kh + j * D + x] += dS[t * T + j] * q[qh + t * D + x] * scale;
            r.dv[kh + j * D + x] += P[t * T + j] * g[qh + t * D + x];
          }
        }
      }
    }
  }
  return r;
}

// Same values in another memory layout: the three of op_test_utils.h, and "heads_inner",
// a (B, T, H, D) buffer seen through transpose(1, 2) (how a fused qkv projection lays them out).
constexpr int kLayouts = 4;
const char* layout_name(int layout) {
  return layout < 3 ? hetu::test::to_string(static_cast<Layout>(layout)) : "heads_inner";
}
Tensor present(const Tensor& t, int layout) {
  if (layout < 3) return hetu::test::with_layout(t, static_cast<Layout>(layout));
  Tensor view = t.transpose(1, 2).contiguous().transpose(1, 2);
  REQUIRE((!view.is_contiguous() || t.size(1) == 1 || t.size(2) == 1));
  return view;
}

double max_abs(const Vec& values) {
  double m = 0;
  for (double x : values) m = std::max(m, std::fabs(x));
  return m;
}

// Relative to the largest expected magnitude, so grads summed over many rows get room in f32.
void check_close(const Tensor& actual, const Vec& expected, DType dtype, double factor = 1.0) {
  CHECK(hetu::test::max_abs_diff(actual, expected) <=
        hetu::test::tolerance(dtype, factor * std::max(1.0, max_abs(expected))));
}

}  // namespace

TEST_CASE("attention forward and backward match the naive reference", "[attention]") {
  struct Heads {
    int64_t H, Hkv;
  };
  uint64_t seed = 1;
  for (Heads heads : {Heads{2, 2}, Heads{4, 2}, Heads{6, 1}}) {
    for (int64_t T : {1, 7, 33, 129}) {
      for (int64_t D : {8, 64}) {
        for (DType dtype : {DType::f32, DType::f64}) {
          for (int layout = 0; layout < kLayouts; ++layout) {
            const Dims d{2, heads.H, heads.Hkv, T, D};
            INFO("H " << d.H << " Hkv " << d.Hkv << " T " << T << " D " << D << " " << hetu::to_string(dtype) << " "
                      << layout_name(layout));
            const double scale = 1.0 / std::sqrt(static_cast<double>(D));
            const Tensor q = hetu::test::random_tensor({d.B, d.H, T, D}, dtype, ++seed);
            const Tensor k = hetu::test::random_tensor({d.B, d.Hkv, T, D}, dtype, ++seed);
            const Tensor v = hetu::test::random_tensor({d.B, d.Hkv, T, D}, dtype, ++seed);
            const Tensor g = hetu::test::random_tensor({d.B, d.H, T, D}, dtype, ++seed);
            const Vec qv = hetu::to_vector(q), kv = hetu::to_vector(k), vv = hetu::to_vector(v);
            const NaiveForward ref = naive_attention(qv, kv, vv, d, scale);
            const hetu::ops::AttentionResult res =
                hetu::ops::attention(present(q, layout), present(k, layout), present(v, layout), scale);
            REQUIRE(res.out.shape() == Shape{d.B, d.H, T, D});
            REQUIRE(res.lse.shape() == Shape{d.B, d.H, T});
            check_close(res.out, ref.out, dtype);
            check_close(res.lse, ref.lse, dtype);

            const NaiveGrads gref = naive_attention_backward(hetu::to_vector(g), qv, kv, vv, ref.probs, d, scale);
            const hetu::ops::AttentionGrads grads =
                hetu::ops::attention_backward(present(g, layout), present(q, layout), present(k, layout),
                                              present(v, layout), present(res.out, layout), res.lse, scale);
            REQUIRE(grads.dk.shape() == Shape{d.B, d.Hkv, T, D});
            check_close(grads.dq, gref.dq, dtype);
            check_close(grads.dk, gref.dk, dtype);
            check_close(grads.dv, gref.dv, dtype);
          }
        }
      }
    }
  }
}

// Scores up to ~±256 (exp overflows f32 past 88) and scores that grow along the keys, so
// every key tile raises the running max and the accumulator must be rescaled (T = 600 spans
// three of the CPU forward's 256-key tiles and three of its backward's 256-row chunks).
TEST_CASE("attention stays finite and exact with large and growing scores", "[attention]") {
  const Dims d{1, 2, 1, 600, 64};
  for (DType dtype : {DType::f32, DType::f64}) {
    INFO(hetu::to_string(dtype));
    const Tensor q = hetu::test::random_tensor({d.B, d.H, d.T, d.D}, dtype, 11, -2.0, 2.0);
    const Tensor k = hetu::test::random_tensor({d.B, d.Hkv, d.T, d.D}, dtype, 12, -2.0, 2.0);
    const Tensor v = hetu::test::random_tensor({d.B, d.Hkv, d.T, d.D}, dtype, 13);
    const NaiveForward ref = naive_attention(hetu::to_vector(q), hetu::to_vector(k), hetu::to_vector(v), d, 1.0);
    hetu::ops::AttentionResult res = hetu::ops::attention(q, k, v, 1.0);
    check_close(res.out, ref.out, dtype);
    check_close(res.lse, ref.lse, dtype);

    // q = 1, k_j = j/16: score_j = 4j, strictly increasing, up to 2396.
    Vec kg(static_cast<size_t>(d.T * d.D));
    for (int64_t j = 0; j < d.T; ++j) std::fill_n(kg.begin() + j * d.D, d.D, static_cast<double>(j) / 16.0);
    const Tensor ones = hetu::ones({1, 1, d.T, d.D}, dtype);
    const Tensor growing = hetu::tensor_from(kg, {1, 1, d.T, d.D}).to(dtype);
    const Dims g{1, 1, 1, d.T, d.D};
    const Vec vv = hetu::to_vector(v.narrow(1, 0, 1));
    const NaiveForward gref = naive_attention(hetu::to_vector(ones), kg, vv, g, 1.0);
    res = hetu::ops::attention(ones, growing, v.narrow(1, 0, 1), 1.0);
    check_close(res.out, gref.out, dtype);
    check_close(res.lse, gref.lse, dtype);
  }
}

namespace {

// Central differences of L = Σ out ∘ G in f64, one element of q, k, v at a time, with the
// documents cu (empty: one per row).
void check_finite_differences(const Dims& d, double scale, const std::vector<int64_t>& cu, uint64_t seed) {
  const double eps = 1e-6;
  Vec q = hetu::to_vector(hetu::test::random_tensor({d.B, d.H, d.T, d.D}, DType::f64, seed));
  Vec k = hetu::to_vector(hetu::test::random_tensor({d.B, d.Hkv, d.T, d.D}, DType::f64, seed + 1));
  Vec v = hetu::to_vector(hetu::test::random_tensor({d.B, d.Hkv, d.T, d.D}, DType::f64, seed + 2));
  const Tensor g = hetu::test::random_tensor({d.B, d.H, d.T, d.D}, DType::f64, seed + 3);
  const Vec gv = hetu::to_vector(g);
  const Shape q_shape{d.B, d.H, d.T, d.D}, kv_shape{d.B, d.Hkv, d.T, d.D};
  auto loss = [&] {
    const Vec out = hetu::to_vector(hetu::ops::attention(hetu::tensor_from(q, q_shape), hetu::tensor_from(k, kv_shape),
                                                         hetu::tensor_from(v, kv_shape), scale, cu)
                                        .out);
    double sum = 0;
    for (size_t i = 0; i < out.size(); ++i) sum += out[i] * gv[i];
    return sum;
  };
  const Tensor qt = hetu::tensor_from(q, q_shape), kt = hetu::tensor_from(k, kv_shape),
               vt = hetu::tensor_from(v, kv_shape);
  const hetu::ops::AttentionResult res = hetu::ops::attention(qt, kt, vt, scale, cu);
  const hetu::ops::AttentionGrads grads = hetu::ops::attention_backward(g, qt, kt, vt, res.out, res.lse, scale, cu);
  struct Input {
    const char* name;
    Vec* values;
    Vec grad;
  };
  for (Input input : {Input{"q", &q, hetu::to_vector(grads.dq)}, Input{"k", &k, hetu::to_vector(grads.dk)},
                      Input{"v", &v, hetu::to_vector(grads.dv)}}) {
    for (size_t i = 0; i < input.values->size(); ++i) {
      INFO(input.name << "[" << i << "]");
      const double saved = (*input.values)[i];
      (*input.values)[i] = saved + eps;
      const double plus = loss();
      (*input.values)[i] = saved - eps;
      const double minus = loss();
      (*input.values)[i] = saved;
      CHECK(std::fabs((plus - minus) / (2 * eps) - input.grad[i]) <= 1e-7);
    }
  }
}

}  // namespace

TEST_CASE("attention_backward matches finite differences", "[attention]") {
  check_finite_differences({1, 2, 1, 4, 3}, 0.7, {}, 21);
}

// Three documents over two rows of 5 (lengths 2, 3 | 1, 4).
TEST_CASE("attention_backward with documents matches finite differences", "[attention]") {
  check_finite_differences({2, 2, 1, 5, 3}, 0.8, {0, 2, 5, 6, 10}, 7401);
}

TEST_CASE("attention rejects bad arguments with specific messages", "[attention]") {
  using hetu::ops::attention;
  const Tensor q = hetu::zeros({1, 3, 4, 8}), k = hetu::zeros({1, 1, 4, 8});
  CHECK_THROWS_WITH(attention(q, hetu::zeros({1, 2, 4, 8}), hetu::zeros({1, 2, 4, 8}), 1.0),
                    "attention: 3 query heads are not a multiple of 2 kv heads");
  // More keys than queries is decoding with a KV cache (allowed); fewer is an error.
  CHECK_THROWS_WITH(attention(q, hetu::zeros({1, 1, 3, 8}), hetu::zeros({1, 1, 3, 8}), 1.0),
                    "attention: sequence lengths differ: q 4 vs k 3");
  CHECK_THROWS_WITH(attention(q, hetu::zeros({1, 1, 4, 6}), hetu::zeros({1, 1, 4, 6}), 1.0),
                    "attention: head dims differ: q 8 vs k 6");
  CHECK_THROWS_WITH(attention(q, hetu::zeros({2, 1, 4, 8}), hetu::zeros({2, 1, 4, 8}), 1.0),
                    "attention: batch sizes differ: q 1 vs k 2");
  CHECK_THROWS_WITH(attention(q, k, hetu::zeros({1, 1, 4, 7}), 1.0),
                    "attention: k (1, 1, 4, 8) and v (1, 1, 4, 7) shapes differ");
  CHECK_THROWS_WITH(attention(hetu::zeros({3, 4, 8}), k, k, 1.0),
                    "attention: q must be (B, H, T, D), got shape (3, 4, 8)");
  CHECK_THROWS_WITH(attention(q, hetu::zeros({1, 0, 4, 8}), hetu::zeros({1, 0, 4, 8}), 1.0),
                    "attention: 3 query heads are not a multiple of 0 kv heads");
  CHECK_THROWS_WITH(attention(q, k, k, INFINITY), "attention: scale must be finite, got inf");
  CHECK_THROWS_WITH(attention(q, k.to(DType::f64), k, 1.0), Catch::StartsWith("attention: dtypes differ"));
  CHECK_THROWS_WITH(attention(q.to(DType::i32), k, k, 1.0), Catch::StartsWith("op attention not implemented"));

  const hetu::ops::AttentionResult res = attention(q, k, k, 1.0);
  CHECK_THROWS_WITH(hetu::ops::attention_backward(q, q, k, k, res.out, hetu::zeros({1, 3, 5}), 1.0),
                    "attention_backward: lse must be (1, 3, 4), got (1, 3, 5)");
  CHECK_THROWS_WITH(hetu::ops::attention_backward(hetu::zeros({1, 3, 4, 6}), q, k, k, res.out, res.lse, 1.0),
                    "attention_backward: grad_out (1, 3, 4, 6) must match q (1, 3, 4, 8)");
  CHECK_THROWS_WITH(
      hetu::ops::attention_backward(q, q, hetu::zeros({1, 1, 5, 8}), hetu::zeros({1, 1, 5, 8}), res.out, res.lse, 1.0),
      "attention_backward: sequence lengths differ: q 4 vs k 5");
}

TEST_CASE("attention with a longer key cache equals the last rows of full attention", "[attention]") {
  // Decoding: queries for the last 3 of 11 positions against all 11 keys must equal rows
  // 8..10 of attention over the whole sequence (GQA 4/2).
  const Tensor q = hetu::test::random_tensor({2, 4, 11, 8}, DType::f64, 901);
  const Tensor k = hetu::test::random_tensor({2, 2, 11, 8}, DType::f64, 902);
  const Tensor v = hetu::test::random_tensor({2, 2, 11, 8}, DType::f64, 903);
  const hetu::ops::AttentionResult full = hetu::ops::attention(q, k, v, 0.35);
  const hetu::ops::AttentionResult tail = hetu::ops::attention(q.narrow(2, 8, 3), k, v, 0.35);
  CHECK(hetu::test::max_abs_diff(tail.out, to_vector(full.out.narrow(2, 8, 3))) <= 1e-12);
  CHECK(hetu::test::max_abs_diff(tail.lse, to_vector(full.lse.narrow(2, 8, 3))) <= 1e-12);
  CHECK_THROWS_WITH(hetu::ops::attention_backward(tail.out, q.narrow(2, 8, 3), k, v, tail.out, tail.lse, 0.35),
                    Catch::Contains("sequence lengths differ"));
  // A long prefill chunk: the last 40 of 300 positions (a full query block and more, so the
  // kernel takes its transposed-keys path; the cache spans several key chunks). The tail runs
  // first, so its buffers cannot hold what the full run left there.
  const Tensor q2 = hetu::test::random_tensor({1, 4, 300, 8}, DType::f64, 904);
  const Tensor k2 = hetu::test::random_tensor({1, 2, 300, 8}, DType::f64, 905);
  const Tensor v2 = hetu::test::random_tensor({1, 2, 300, 8}, DType::f64, 906);
  const hetu::ops::AttentionResult tail2 = hetu::ops::attention(q2.narrow(2, 260, 40), k2, v2, 0.35);
  const hetu::ops::AttentionResult full2 = hetu::ops::attention(q2, k2, v2, 0.35);
  CHECK(hetu::test::max_abs_diff(tail2.out, to_vector(full2.out.narrow(2, 260, 40))) <= 1e-12);
  CHECK(hetu::test::max_abs_diff(tail2.lse, to_vector(full2.lse.narrow(2, 260, 40))) <= 1e-12);
}

// How GPT-2 calls attention: q, k, v are (B, H, T, D) views of one fused (B, T, 3·H·D)
// projection (row stride 3·H·D), and the gradient arrives as a view of (B, T, H·D). The CPU
// kernels read those in place and lay out out as (B, T, heads, D), so that the transpose back
// to (B, T, H·D) is contiguous (no copy), and dq, dk, dv as the same views of one fused
// gradient. See Note [Attention layouts] and Note [Fused q/k/v gradients].
TEST_CASE("attention reads a fused qkv projection in place and writes (B, T, H, D) outputs", "[attention]") {
  uint64_t seed = 5000;
  struct Heads {
    int64_t H, Hkv;
  };
  for (Heads heads : {Heads{4, 4}, Heads{4, 2}}) {
    for (int64_t T : {1, 65, 130}) {
      for (DType dtype : {DType::f32, DType::f64}) {
        const int64_t B = 2, D = 16, H = heads.H, Hkv = heads.Hkv;
        const Dims d{B, H, Hkv, T, D};
        INFO("H " << H << " Hkv " << Hkv << " T " << T << " " << hetu::to_string(dtype));
        const int64_t width = (H + 2 * Hkv) * D;
        const Tensor qkv = hetu::test::random_tensor({B, T, width}, dtype, ++seed);
        auto heads_of = [&](int64_t start, int64_t n) {
          return qkv.narrow(2, start * D, n * D).view({B, T, n, D}).transpose(1, 2);
        };
        const Tensor q = heads_of(0, H), k = heads_of(H, Hkv), v = heads_of(H + Hkv, Hkv);
        const Tensor g = hetu::test::random_tensor({B, T, H * D}, dtype, ++seed).view({B, T, H, D}).transpose(1, 2);
        const double scale = 0.25;
        const Vec qv = hetu::to_vector(q), kv = hetu::to_vector(k), vv = hetu::to_vector(v);
        const NaiveForward ref = naive_attention(qv, kv, vv, d, scale);
        const hetu::ops::AttentionResult res = hetu::ops::attention(q, k, v, scale);
        REQUIRE(res.out.shape() == Shape{B, H, T, D});
        CHECK(res.out.transpose(1, 2).is_contiguous());
        check_close(res.out, ref.out, dtype);
        check_close(res.lse, ref.lse, dtype);

        const NaiveGrads gref = naive_attention_backward(hetu::to_vector(g), qv, kv, vv, ref.probs, d, scale);
        const hetu::ops::AttentionGrads grads = hetu::ops::attention_backward(g, q, k, v, res.out, res.lse, scale);
        // Note [Fused q/k/v gradients]: dq, dk, dv are to one (B, T, width) gradient what q, k, v are to qkv.
        for (auto [grad, input] : {std::pair{&grads.dq, &q}, std::pair{&grads.dk, &k}, std::pair{&grads.dv, &v}}) {
          CHECK(grad->storage() == grads.dq.storage());
          CHECK(grad->strides() == input->strides());
          CHECK(grad->offset() - grads.dq.offset() == input->offset() - q.offset());
        }
        check_close(grads.dq, gref.dq, dtype);
        check_close(grads.dk, gref.dk, dtype);
        check_close(grads.dv, gref.dv, dtype);
        // The same values handed over contiguous give the same results, and (B, T, heads, D) gradients.
        const hetu::ops::AttentionResult plain =
            hetu::ops::attention(q.contiguous(), k.contiguous(), v.contiguous(), scale);
        CHECK(hetu::test::max_abs_diff(plain.out, hetu::to_vector(res.out)) == 0.0);
        const hetu::ops::AttentionGrads plain_grads =
            hetu::ops::attention_backward(g, q.contiguous(), k.contiguous(), v.contiguous(), res.out, res.lse, scale);
        for (const Tensor* grad : {&plain_grads.dq, &plain_grads.dk, &plain_grads.dv}) {
          CHECK(grad->transpose(1, 2).is_contiguous());
        }
        CHECK(hetu::test::max_abs_diff(plain_grads.dq, hetu::to_vector(grads.dq)) == 0.0);
        CHECK(hetu::test::max_abs_diff(plain_grads.dk, hetu::to_vector(grads.dk)) == 0.0);
        CHECK(hetu::test::max_abs_diff(plain_grads.dv, hetu::to_vector(grads.dv)) == 0.0);
      }
    }
  }
}
