// Tests for ops::attention / attention_backward with documents (cu_seqlens, ops.h) against a
// naive reference written here: every document is cut out of the batch and run alone through
// the plain f64 causal softmax(q kᵀ·scale) v, with its own (n, n) score matrix, forward and
// backward (L = Σ out ∘ G). Also: the padded batch is the special case cu = [0, T, 2T, …]
// (bitwise), a document's outputs and gradients do not move when another document changes
// (bitwise), central differences in f64, and the argument checks.
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
using Vec = std::vector<double>;
using Offsets = std::vector<int64_t>;

struct Dims {
  int64_t B, H, Hkv, T, D;
};

struct Reference {
  Vec out, lse, dq, dk, dv;
};

// q, g (B, H, T, D), k, v (B, Hkv, T, D) as row-major values; cu over the B·T tokens.
Reference naive_documents(const Vec& q, const Vec& k, const Vec& v, const Vec& g, const Dims& d, const Offsets& cu,
                          double scale) {
  Reference r{Vec(q.size(), 0.0), Vec(static_cast<size_t>(d.B * d.H * d.T), 0.0), Vec(q.size(), 0.0),
              Vec(k.size(), 0.0), Vec(v.size(), 0.0)};
  const int64_t D = d.D;
  for (size_t i = 0; i + 1 < cu.size(); ++i) {
    const int64_t b = cu[i] / d.T, first = cu[i] % d.T, n = cu[i + 1] - cu[i];
    if (n == 0) continue;
    for (int64_t h = 0; h < d.H; ++h) {
      const int64_t hkv = h / (d.H / d.Hkv);
      auto qi = [&](int64_t t, int64_t x) { return static_cast<size_t>(((b * d.H + h) * d.T + first + t) * D + x); };
      auto ki = [&](int64_t j, int64_t x) {
        return static_cast<size_t>(((b * d.Hkv + hkv) * d.T + first + j) * D + x);
      };
      Vec P(static_cast<size_t>(n * n), 0.0), dP(static_cast<size_t>(n * n), 0.0);
      for (int64_t t = 0; t < n; ++t) {
        Vec s(static_cast<size_t>(t + 1));
        for (int64_t j = 0; j <= t; ++j) {
          double acc = 0;
          for (int64_t x = 0; x < D; ++x) acc += q[qi(t, x)] * k[ki(j, x)];
          s[static_cast<size_t>(j)] = acc * scale;
        }
        const double m = *std::max_element(s.begin(), s.end());
        double sum = 0;
        for (double e : s) sum += std::exp(e - m);
        r.lse[static_cast<size_t>((b * d.H + h) * d.T + first + t)] = m + std::log(sum);
        for (int64_t j = 0; j <= t; ++j) {
          const double p = std::exp(s[static_cast<size_t>(j)] - m) / sum;
          P[static_cast<size_t>(t * n + j)] = p;
          for (int64_t x = 0; x < D; ++x) r.out[qi(t, x)] += p * v[ki(j, x)];
        }
      }
      for (int64_t t = 0; t < n; ++t) {
        double rowsum = 0;
        for (int64_t j = 0; j <= t; ++j) {
          double acc = 0;
          for (int64_t x = 0; x < D; ++x) acc += g[qi(t, x)] * v[ki(j, x)];
          dP[static_cast<size_t>(t * n + j)] = acc;
          rowsum += P[static_cast<size_t>(t * n + j)] * acc;
        }
        for (int64_t j = 0; j <= t; ++j) {
          const double p = P[static_cast<size_t>(t * n + j)];
          const double ds = p * (dP[static_cast<size_t>(t * n + j)] - rowsum);
          for (int64_t x = 0; x < D; ++x) {
            r.dq[qi(t, x)] += ds * k[ki(j, x)] * scale;
            r.dk[ki(j, x)] += ds * q[qi(t, x)] * scale;
            r.dv[ki(j, x)] += p * g[qi(t, x)];
          }
        }
      }
    }
  }
  return r;
}

double max_abs(const Vec& values) {
  double m = 0;
  for (double x : values) m = std::max(m, std::fabs(x));
  return m;
}

void check_close(const Tensor& actual, const Vec& expected, DType dtype) {
  CHECK(hetu::test::max_abs_diff(actual, expected) <= hetu::test::tolerance(dtype, std::max(1.0, max_abs(expected))));
}

struct Inputs {
  Tensor q, k, v, g;
};

// With fused = true, q, k, v are (B, H, T, D) views of one (B, T, (H + 2·Hkv)·D) projection
// and g a view of (B, T, H·D), as GPT-2 hands them over.
Inputs random_inputs(const Dims& d, DType dtype, uint64_t seed, bool fused) {
  if (!fused) {
    return {hetu::test::random_tensor({d.B, d.H, d.T, d.D}, dtype, seed),
            hetu::test::random_tensor({d.B, d.Hkv, d.T, d.D}, dtype, seed + 1),
            hetu::test::random_tensor({d.B, d.Hkv, d.T, d.D}, dtype, seed + 2),
            hetu::test::random_tensor({d.B, d.H, d.T, d.D}, dtype, seed + 3)};
  }
  const Tensor qkv = hetu::test::random_tensor({d.B, d.T, (d.H + 2 * d.Hkv) * d.D}, dtype, seed);
  auto heads = [&](int64_t start, int64_t n) {
    return qkv.narrow(2, start * d.D, n * d.D).view({d.B, d.T, n, d.D}).transpose(1, 2);
  };
  return {heads(0, d.H), heads(d.H, d.Hkv), heads(d.H + d.Hkv, d.Hkv),
          hetu::test::random_tensor({d.B, d.T, d.H * d.D}, dtype, seed + 1).view({d.B, d.T, d.H, d.D}).transpose(1, 2)};
}

struct Case {
  Dims d;
  Offsets cu;
  const char* what;
};

}  // namespace

TEST_CASE("attention with documents matches each document run alone", "[attention]") {
  const Case cases[] = {
      // Odd lengths, a length-1 document at a row's start and inside a row, an empty document.
      {{2, 2, 2, 13, 8}, {0, 5, 6, 13, 14, 14, 20, 26}, "MHA, odd lengths, length 1, empty"},
      {{2, 4, 2, 13, 8}, {0, 1, 8, 13, 16, 26}, "GQA 4/2"},
      {{1, 6, 1, 9, 16}, {0, 2, 3, 4, 9}, "MQA 6/1"},
      // Documents longer than a 64-row block, boundaries off the blocks.
      {{2, 4, 2, 150, 16}, {0, 70, 71, 150, 150 + 129, 300}, "GQA, long documents"},
      {{3, 2, 1, 7, 4}, {0, 7, 14, 21}, "one document per row"},
  };
  uint64_t seed = 7000;
  for (const Case& c : cases) {
    for (DType dtype : {DType::f32, DType::f64}) {
      for (bool fused : {false, true}) {
        INFO(c.what << " " << hetu::to_string(dtype) << (fused ? " fused qkv" : " contiguous"));
        const Dims& d = c.d;
        const double scale = 1.0 / std::sqrt(static_cast<double>(d.D));
        const Inputs in = random_inputs(d, dtype, seed += 10, fused);
        const Reference ref = naive_documents(hetu::to_vector(in.q), hetu::to_vector(in.k), hetu::to_vector(in.v),
                                              hetu::to_vector(in.g), d, c.cu, scale);
        const hetu::ops::AttentionResult res = hetu::ops::attention(in.q, in.k, in.v, scale, c.cu);
        REQUIRE(res.out.shape() == Shape{d.B, d.H, d.T, d.D});
        check_close(res.out, ref.out, dtype);
        check_close(res.lse, ref.lse, dtype);
        const hetu::ops::AttentionGrads grads =
            hetu::ops::attention_backward(in.g, in.q, in.k, in.v, res.out, res.lse, scale, c.cu);
        check_close(grads.dq, ref.dq, dtype);
        check_close(grads.dk, ref.dk, dtype);
        check_close(grads.dv, ref.dv, dtype);
      }
    }
  }
}

TEST_CASE("attention without cu_seqlens is the case of one document per row, bitwise", "[attention]") {
  const Dims d{3, 4, 2, 70, 8};
  const Offsets rows{0, 70, 140, 210};
  const Inputs in = random_inputs(d, DType::f32, 7100, false);
  const hetu::ops::AttentionResult plain = hetu::ops::attention(in.q, in.k, in.v, 0.3);
  const hetu::ops::AttentionResult docs = hetu::ops::attention(in.q, in.k, in.v, 0.3, rows);
  CHECK(hetu::to_vector(plain.out) == hetu::to_vector(docs.out));
  CHECK(hetu::to_vector(plain.lse) == hetu::to_vector(docs.lse));
  const hetu::ops::AttentionGrads a = hetu::ops::attention_backward(in.g, in.q, in.k, in.v, plain.out, plain.lse, 0.3);
  const hetu::ops::AttentionGrads b =
      hetu::ops::attention_backward(in.g, in.q, in.k, in.v, plain.out, plain.lse, 0.3, rows);
  CHECK(hetu::to_vector(a.dq) == hetu::to_vector(b.dq));
  CHECK(hetu::to_vector(a.dk) == hetu::to_vector(b.dk));
  CHECK(hetu::to_vector(a.dv) == hetu::to_vector(b.dv));
}

// Document A = tokens [0, 40) of row 0, B = [40, 100) of row 0 and all of row 1. Changing A's
// q, k, v and incoming gradient must leave B's out, lse, dq, dk, dv bitwise equal.
TEST_CASE("changing one document leaves another's outputs and gradients bitwise unchanged", "[attention]") {
  const Dims d{2, 4, 2, 100, 16};
  const Offsets cu{0, 40, 100, 200};
  const int64_t a_len = 40;
  for (DType dtype : {DType::f32, DType::f64}) {
    INFO(hetu::to_string(dtype));
    const Inputs x = random_inputs(d, dtype, 7200, false);
    const Inputs y = random_inputs(d, dtype, 7300, false);
    // y's values in document A, x's everywhere else.
    auto splice = [&](const Tensor& base, const Tensor& other) {
      Tensor t = base.clone();
      t.narrow(0, 0, 1).narrow(2, 0, a_len).copy_from(other.narrow(0, 0, 1).narrow(2, 0, a_len));
      return t;
    };
    const Inputs z{splice(x.q, y.q), splice(x.k, y.k), splice(x.v, y.v), splice(x.g, y.g)};
    // Only B's rows: row 0 from a_len on, and row 1.
    auto rows_of_b = [&](const Tensor& t) {
      Vec values = hetu::to_vector(t.narrow(0, 0, 1).narrow(2, a_len, d.T - a_len));
      const Vec row1 = hetu::to_vector(t.narrow(0, 1, 1));
      values.insert(values.end(), row1.begin(), row1.end());
      return values;
    };
    auto run = [&](const Inputs& in) {
      const hetu::ops::AttentionResult r = hetu::ops::attention(in.q, in.k, in.v, 0.25, cu);
      const hetu::ops::AttentionGrads g = hetu::ops::attention_backward(in.g, in.q, in.k, in.v, r.out, r.lse, 0.25, cu);
      const Tensor lse = r.lse.unsqueeze(3);  // (B, H, T, 1): the same slicing as the rest
      return std::vector<Vec>{rows_of_b(r.out), rows_of_b(lse), rows_of_b(g.dq), rows_of_b(g.dk), rows_of_b(g.dv),
                              hetu::to_vector(r.out.narrow(2, 0, a_len))};
    };
    const std::vector<Vec> rx = run(x), rz = run(z);
    for (size_t i = 0; i < 5; ++i) {
      INFO("output " << i << " (out, lse, dq, dk, dv)");
      CHECK(rx[i] == rz[i]);
    }
    CHECK(rx[5] != rz[5]);  // document A itself did change
  }
}

// Central differences of L = Σ out ∘ G in f64 with three documents over two rows.
TEST_CASE("attention_backward with documents matches finite differences", "[attention]") {
  const Dims d{2, 2, 1, 5, 3};
  const Offsets cu{0, 2, 5, 6, 10};
  const double scale = 0.8, eps = 1e-6;
  const Shape q_shape{d.B, d.H, d.T, d.D}, kv_shape{d.B, d.Hkv, d.T, d.D};
  Vec q = hetu::to_vector(hetu::test::random_tensor(q_shape, DType::f64, 7401));
  Vec k = hetu::to_vector(hetu::test::random_tensor(kv_shape, DType::f64, 7402));
  Vec v = hetu::to_vector(hetu::test::random_tensor(kv_shape, DType::f64, 7403));
  const Tensor g = hetu::test::random_tensor(q_shape, DType::f64, 7404);
  const Vec gv = hetu::to_vector(g);
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

TEST_CASE("attention rejects bad cu_seqlens with specific messages", "[attention]") {
  using hetu::ops::attention;
  const Tensor q = hetu::zeros({2, 2, 4, 8}), k = hetu::zeros({2, 1, 4, 8});
  CHECK_THROWS_WITH(attention(q, k, k, 1.0, Offsets{8}),
                    "attention: cu_seqlens must hold at least [0, B·T] = [0, 8], got 1 entries");
  CHECK_THROWS_WITH(attention(q, k, k, 1.0, Offsets{1, 4, 8}), "attention: cu_seqlens must start at 0, got 1");
  CHECK_THROWS_WITH(attention(q, k, k, 1.0, Offsets{0, 4, 7}), "attention: cu_seqlens must end at B·T = 8, got 7");
  CHECK_THROWS_WITH(attention(q, k, k, 1.0, Offsets{0, 3, 2, 4, 8}),
                    "attention: cu_seqlens must be non-decreasing, got 2 after 3 at index 2");
  CHECK_THROWS_WITH(attention(q, k, k, 1.0, Offsets{0, 3, 6, 8}),
                    "attention: cu_seqlens must contain every multiple of T = 4 (a document may not cross batch "
                    "rows); 4 is missing between 3 and 6");
  CHECK_THROWS_WITH(attention(q.narrow(2, 1, 3), k, k, 1.0, Offsets{0, 3, 6}),
                    "attention: cu_seqlens cannot be combined with a longer key cache (T 3 queries, 4 keys)");
  const hetu::ops::AttentionResult res = attention(q, k, k, 1.0, Offsets{0, 1, 4, 8});
  CHECK_THROWS_WITH(hetu::ops::attention_backward(q, q, k, k, res.out, res.lse, 1.0, Offsets{0, 5, 8}),
                    Catch::StartsWith("attention_backward: cu_seqlens must contain every multiple of T = 4"));
}
