// ops::linear_cross_entropy (the fused LM head + cross-entropy) against a naive f64 loop
// written here (logits = h Wᵀ, log-sum-exp, softmax - onehot, both gradient products):
// loss, dhidden and dweight within 1e-5 relative in f32 and 1e-12 in f64; chunk sizes that
// leave a ragged last chunk, one row per chunk and one chunk; vocabulary blocks of one column,
// a ragged last block, a block of padding only, one block; one row (T = 1); ignored rows;
// padding rows of the weight; a vocabulary shard (offset) whose targets lie elsewhere; a
// `combine` that rescales the statistics (what tensor parallelism does); extreme logits whose
// row maxima differ across a chunk boundary; the loss-only form; errors.
#include <algorithm>
#include <cmath>
#include <vector>

#include "lib/ops/ops.h"
#include "tests/ops/op_test_utils.h"

using namespace hetu;
using namespace hetu::test;

namespace {

struct Reference {
  double loss;                    // Σ_kept row loss · scale
  std::vector<double> dh, dw;     // (N, C), (V, C)
  int64_t count;
};

// Classes 0 .. real - 1 are the weight's first `real` rows; the other rows are padding.
Reference naive(const std::vector<double>& h, const std::vector<double>& w, const std::vector<int64_t>& t, int64_t C,
                int64_t V, int64_t real, int64_t ignore, double normalizer) {
  const int64_t N = static_cast<int64_t>(t.size());
  Reference r{0, std::vector<double>(static_cast<size_t>(N * C), 0.0), std::vector<double>(static_cast<size_t>(V * C), 0.0), 0};
  for (int64_t n = 0; n < N; ++n) r.count += t[static_cast<size_t>(n)] != ignore;
  const double scale = 1.0 / std::max(normalizer != 0 ? normalizer : static_cast<double>(r.count), 1.0);
  double loss = 0;
  for (int64_t n = 0; n < N; ++n) {
    const int64_t target = t[static_cast<size_t>(n)];
    if (target == ignore) continue;
    std::vector<double> z(static_cast<size_t>(real));
    double m = -INFINITY;
    for (int64_t v = 0; v < real; ++v) {
      double s = 0;
      for (int64_t c = 0; c < C; ++c) s += h[static_cast<size_t>(n * C + c)] * w[static_cast<size_t>(v * C + c)];
      z[static_cast<size_t>(v)] = s;
      m = std::max(m, s);
    }
    double S = 0;
    for (double zv : z) S += std::exp(zv - m);
    const int64_t col = target;
    loss += std::log(S) - (z[static_cast<size_t>(col)] - m);
    for (int64_t v = 0; v < real; ++v) {
      const double g = scale * (std::exp(z[static_cast<size_t>(v)] - m) / S - (v == col ? 1.0 : 0.0));
      for (int64_t c = 0; c < C; ++c) {
        r.dh[static_cast<size_t>(n * C + c)] += g * w[static_cast<size_t>(v * C + c)];
        r.dw[static_cast<size_t>(v * C + c)] += g * h[static_cast<size_t>(n * C + c)];
      }
    }
  }
  r.loss = loss * scale;
  return r;
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

// |actual - expected| <= tol · max(|expected|) over the tensor (1e-300 guards all-zero).
void check_close(const Tensor& actual, const std::vector<double>& expected, double tol) {
  CHECK(max_abs_diff(actual, expected) <= tol * std::max(max_abs(expected), 1e-300));
}

std::vector<int64_t> targets_with_ignored(int64_t N, int64_t V, uint64_t seed) {
  std::vector<int64_t> t(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) t[static_cast<size_t>(n)] = (n * 7 + static_cast<int64_t>(seed)) % V;
  for (int64_t n = 2; n < N; n += 5) t[static_cast<size_t>(n)] = -100;
  return t;
}

}  // namespace

TEST_CASE("linear_cross_entropy matches the naive loss and both gradients", "[linear_cross_entropy]") {
  struct Case {
    int64_t N, C, V, real;
  };
  // V = 37 rows, 33 real (4 padding rows); N = 1 is T = 1; 23 rows leave ragged chunks.
  for (Case k : {Case{23, 5, 37, 33}, Case{1, 4, 9, 9}, Case{12, 3, 8, 8}}) {
    for (DType dtype : {DType::f32, DType::f64}) {
      const double tol = dtype == DType::f64 ? 1e-12 : 1e-5;
      const Tensor h = random_tensor({k.N, k.C}, dtype, 1, -2, 2), w = random_tensor({k.V, k.C}, dtype, 2, -2, 2);
      const std::vector<int64_t> t = targets_with_ignored(k.N, k.real, 3);
      for (double normalizer : {0.0, 50.0}) {
        const Reference ref = naive(to_vector(h), to_vector(w), t, k.C, k.V, k.real, -100, normalizer);
        for (int64_t chunk : {int64_t{1}, int64_t{4}, int64_t{7}, int64_t{0}})
        for (int64_t block : {int64_t{0}, int64_t{1}, int64_t{5}, int64_t{8}}) {
          INFO(to_string(dtype) << " N " << k.N << " V " << k.V << " normalizer " << normalizer << " chunk " << chunk
                                << " vocab block " << block);
          ops::LinearCrossEntropyOptions o;
          o.vocab = k.real;
          o.normalizer = normalizer;
          o.chunk_rows = chunk;
          o.vocab_block = block;  // V 37 / 33 real in blocks of 5: [30, 35) part padding, [35, 37) padding only
          const ops::LinearCrossEntropyResult r = ops::linear_cross_entropy(h, w, tensor_from(t, {k.N}), o);
          CHECK(r.count == ref.count);
          CHECK(std::fabs(r.loss.item() - ref.loss) <= tol * std::fabs(ref.loss));
          check_close(r.dhidden, ref.dh, tol);
          check_close(r.dweight, ref.dw, tol);
          o.grads = false;
          const ops::LinearCrossEntropyResult l = ops::linear_cross_entropy(h, w, tensor_from(t, {k.N}).to(DType::i32), o);
          CHECK(!l.dhidden.defined());
          CHECK(std::fabs(l.loss.item() - ref.loss) <= tol * std::fabs(ref.loss));
        }
      }
    }
  }
}

TEST_CASE("linear_cross_entropy zeroes ignored rows and never sees padding rows", "[linear_cross_entropy]") {
  // Padding rows of the weight are huge: counted, they would own the softmax.
  const int64_t N = 6, C = 3, V = 7, real = 5;
  Tensor w = random_tensor({V, C}, DType::f64, 4);
  w.narrow(0, real, V - real).copy_from(full({V - real, C}, 50.0, DType::f64));
  const Tensor h = random_tensor({N, C}, DType::f64, 5);
  const std::vector<int64_t> t{-100, 1, 4, -100, 0, -100};
  for (int64_t block : {int64_t{0}, int64_t{2}}) {  // blocks of 2: [4, 6) part padding, [6, 7) padding only
  INFO("vocab block " << block);
  ops::LinearCrossEntropyOptions o;
  o.vocab = real;
  o.chunk_rows = 4;
  o.vocab_block = block;
  const ops::LinearCrossEntropyResult r = ops::linear_cross_entropy(h, w, tensor_from(t, {N}), o);
  const Reference ref = naive(to_vector(h), to_vector(w), t, C, V, real, -100, 0);
  CHECK(r.count == 3);
  CHECK(std::fabs(r.loss.item() - ref.loss) <= 1e-12 * ref.loss);
  const std::vector<double> dh = to_vector(r.dhidden), dw = to_vector(r.dweight);
  for (int64_t n : {0, 3, 5}) {
    for (int64_t c = 0; c < C; ++c) CHECK(dh[static_cast<size_t>(n * C + c)] == 0.0);
  }
  for (int64_t i = real * C; i < V * C; ++i) CHECK(dw[static_cast<size_t>(i)] == 0.0);
  check_close(r.dhidden, ref.dh, 1e-12);
  check_close(r.dweight, ref.dw, 1e-12);
  }
}

TEST_CASE("linear_cross_entropy stays exact when row maxima differ across a chunk boundary", "[linear_cross_entropy]") {
  // Rows 0-1 (chunk 0) have logits near +900, rows 2-3 (chunk 1) near -900: a max taken from
  // the wrong row or chunk overflows or underflows every exponential.
  const int64_t C = 2, V = 3;
  const Tensor w = tensor_from(std::vector<double>{1, 0, 0, 1, 1, 1}, {V, C});
  const Tensor h = tensor_from(std::vector<double>{900, 899, 450, 451, -900, -899, -450, -452}, {4, C});
  const std::vector<int64_t> t{2, 0, 1, 2};
  const Reference ref = naive(to_vector(h), to_vector(w), t, C, V, V, -100, 0);
  // Vocabulary blocks of one column: a row's blocks have maxima ~900 apart (logits 900, 899, 1799).
  for (DType dtype : {DType::f64, DType::f32})
  for (int64_t block : {int64_t{0}, int64_t{1}, int64_t{2}}) {
    const double tol = dtype == DType::f64 ? 1e-12 : 1e-5;
    ops::LinearCrossEntropyOptions o;
    o.chunk_rows = 2;
    o.vocab_block = block;
    const ops::LinearCrossEntropyResult r =
        ops::linear_cross_entropy(h.to(dtype), w.to(dtype), tensor_from(t, {4}), o);
    INFO(to_string(dtype) << " vocab block " << block);
    CHECK(std::isfinite(r.loss.item()));
    CHECK(std::fabs(r.loss.item() - ref.loss) <= tol * ref.loss);
    check_close(r.dhidden, ref.dh, tol);
    check_close(r.dweight, ref.dw, tol);
  }
}

TEST_CASE("linear_cross_entropy on a vocabulary shard uses the combined statistics", "[linear_cross_entropy]") {
  // This shard holds classes [4, 9) of 12; the other classes' mass per row, e^(M_other - m)·S_other,
  // comes in through `combine` exactly as lib/nn/parallel_cross_entropy.cpp supplies it.
  const int64_t N = 5, C = 3, V = 5, offset = 4, vocab = 12;
  const Tensor h = random_tensor({N, C}, DType::f64, 6), w = random_tensor({V, C}, DType::f64, 7);
  const std::vector<int64_t> t{5, 0, -100, 8, 11};
  const std::vector<double> other_logit{0.3, -0.2, 0.0, 1.5, 0.7};  // the other shards' target logit (or 0)
  const std::vector<double> other_mass{2.0, 0.5, 1.0, 3.0, 0.25};   // Σ exp over other shards relative to M
  ops::LinearCrossEntropyOptions o;
  o.vocab_offset = offset;
  o.vocab = vocab;
  o.chunk_rows = 2;
  int64_t row = 0;
  o.combine = [&](const ops::CrossEntropyShardStats& local) {
    // Global M = local max (so S = local + other mass), T = local target logit + the other's.
    const int64_t R = local.max.size(0);
    const Tensor mass = tensor_from(std::vector<double>(other_mass.begin() + row, other_mass.begin() + row + R), {R});
    const Tensor tl = tensor_from(std::vector<double>(other_logit.begin() + row, other_logit.begin() + row + R), {R});
    row += R;
    return ops::VocabRowStats{local.max, ops::add(local.sum_exp, mass), ops::add(local.target_logit, tl)};
  };
  const ops::LinearCrossEntropyResult r = ops::linear_cross_entropy(h, w, tensor_from(t, {N}), o);
  // The reference: the same softmax written out, the off-shard target's logit is M + other_logit - M.
  const std::vector<double> hv = to_vector(h), wv = to_vector(w);
  double loss = 0;
  std::vector<double> dh(static_cast<size_t>(N * C), 0.0), dw(static_cast<size_t>(V * C), 0.0);
  for (int64_t n = 0; n < N; ++n) {
    if (t[static_cast<size_t>(n)] == -100) continue;
    std::vector<double> z(static_cast<size_t>(V));
    double m = -INFINITY;
    for (int64_t v = 0; v < V; ++v) {
      for (int64_t c = 0; c < C; ++c) z[static_cast<size_t>(v)] += hv[static_cast<size_t>(n * C + c)] * wv[static_cast<size_t>(v * C + c)];
      m = std::max(m, z[static_cast<size_t>(v)]);
    }
    double S = other_mass[static_cast<size_t>(n)];
    for (double zv : z) S += std::exp(zv - m);
    const int64_t col = t[static_cast<size_t>(n)] - offset;
    const double zt = (col >= 0 && col < V ? z[static_cast<size_t>(col)] : 0.0) + other_logit[static_cast<size_t>(n)];
    loss += std::log(S) - (zt - m);
    for (int64_t v = 0; v < V; ++v) {
      const double g = (std::exp(z[static_cast<size_t>(v)] - m) / S - (v == col ? 1.0 : 0.0)) / 4.0;  // 4 kept rows
      for (int64_t c = 0; c < C; ++c) {
        dh[static_cast<size_t>(n * C + c)] += g * wv[static_cast<size_t>(v * C + c)];
        dw[static_cast<size_t>(v * C + c)] += g * hv[static_cast<size_t>(n * C + c)];
      }
    }
  }
  CHECK(r.count == 4);
  CHECK(std::fabs(r.loss.item() - loss / 4.0) <= 1e-12 * std::fabs(loss / 4.0));
  check_close(r.dhidden, dh, 1e-12);
  check_close(r.dweight, dw, 1e-12);
  // Vocabulary blocks of 2 ([4, 6), [6, 8), [8, 9)): targets 5 and 8 lie in the first and last.
  row = 0;
  o.vocab_block = 2;
  const ops::LinearCrossEntropyResult b = ops::linear_cross_entropy(h, w, tensor_from(t, {N}), o);
  CHECK(std::fabs(b.loss.item() - loss / 4.0) <= 1e-12 * std::fabs(loss / 4.0));
  check_close(b.dhidden, dh, 1e-12);
  check_close(b.dweight, dw, 1e-12);
}

TEST_CASE("linear_cross_entropy checks its inputs", "[linear_cross_entropy]") {
  const Tensor h = random_tensor({3, 4}, DType::f32, 8), w = random_tensor({6, 4}, DType::f32, 9);
  ops::LinearCrossEntropyOptions o;
  CHECK_THROWS_WITH(ops::linear_cross_entropy(h, w, tensor_from(std::vector<int64_t>{1, 6, 2}, {3}), o),
                    "linear_cross_entropy: target 6 at row 1 is outside [0, 6) and is not ignore_index (-100)");
  CHECK_THROWS_WITH(ops::linear_cross_entropy(h, random_tensor({6, 5}, DType::f32, 9),
                                              tensor_from(std::vector<int64_t>{1, 2, 3}, {3}), o),
                    Catch::Contains("hidden (N, C), weight (V, C) and targets (N) expected"));
  CHECK_THROWS_WITH(ops::linear_cross_entropy(h, w.to(DType::f64), tensor_from(std::vector<int64_t>{1, 2, 3}, {3}), o),
                    Catch::Contains("dtypes differ"));
}
