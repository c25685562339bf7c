// The tape engine: accumulation into .grad, shared inputs, no-grad mode, freed saved
// tensors, leaves as roots, detach, errors for misuse, and in-place accumulation that never
// writes into memory anything else can see.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "lib/autograd/functions.h"
#include "lib/core/tensor_random.h"
#include "lib/ops/ops.h"

using namespace hetu;
namespace ag = hetu::autograd;

TEST_CASE("gradients accumulate with += across backward calls and shared uses", "[autograd]") {
  Tensor w = tensor_from<double>({1, 2, 3}, {3});
  w.set_requires_grad(true);
  ag::backward(ag::sum(ag::mul(w, w)));  // d/dw Σ w² = 2w
  CHECK(to_vector(w.grad()) == std::vector<double>{2, 4, 6});
  ag::backward(ag::sum(ag::mul_scalar(w, 3.0)));
  CHECK(to_vector(w.grad()) == std::vector<double>{5, 7, 9});
}

TEST_CASE("a diamond graph sums both paths", "[autograd]") {
  Tensor x = tensor_from<double>({0.5, -1.0}, {2});
  x.set_requires_grad(true);
  const Tensor a = ag::exp(x);
  const Tensor y = ag::sum(ag::add(ag::mul(a, a), a));  // Σ e^{2x} + e^x
  ag::backward(y);
  const std::vector<double> g = to_vector(x.grad());
  CHECK(g[0] == Approx(2 * std::exp(1.0) + std::exp(0.5)));
  CHECK(g[1] == Approx(2 * std::exp(-2.0) + std::exp(-1.0)));
}

TEST_CASE("no-grad mode records nothing", "[autograd]") {
  Tensor w = ones({2}).set_requires_grad(true);
  {
    ag::NoGradGuard guard;
    CHECK_FALSE(ag::grad_enabled());
    const Tensor y = ag::mul(w, w);
    CHECK_FALSE(y.requires_grad());
    CHECK(y.grad_fn() == nullptr);
  }
  CHECK(ag::grad_enabled());
  CHECK(ag::mul(w, w).requires_grad());
  CHECK_FALSE(ag::mul(ones({2}), ones({2})).requires_grad());
}

TEST_CASE("saved tensors are freed after backward and a second pass is an error", "[autograd]") {
  Tensor w = ones({4}).set_requires_grad(true);
  const Tensor y = ag::sum(ag::exp(w));
  ag::backward(y);
  CHECK_THROWS_WITH(ag::backward(y), Catch::Contains("a second time"));
}

TEST_CASE("backward needs a scalar or an explicit gradient", "[autograd]") {
  Tensor w = ones({3}).set_requires_grad(true);
  const Tensor y = ag::mul_scalar(w, 2.0);
  CHECK_THROWS_WITH(ag::backward(y), Catch::Contains("only scalars get 1"));
  ag::backward(y, tensor_from<float>({1, 0, -1}, {3}));
  CHECK(to_vector(w.grad()) == std::vector<double>{2, 0, -2});
  CHECK_THROWS_WITH(ag::backward(ones({1})), Catch::Contains("does not require grad"));
}

TEST_CASE("a leaf as the root gets gradient 1 and detach cuts history", "[autograd]") {
  Tensor w = full({1}, 3.0).set_requires_grad(true);
  ag::backward(w);
  CHECK(w.grad().item() == 1.0);
  const Tensor d = ag::mul(w, w).detach();
  CHECK_FALSE(d.requires_grad());
  CHECK(d.grad_fn() == nullptr);
  CHECK(d.item() == 9.0);
}

TEST_CASE("gradients through views reach the base leaf", "[autograd]") {
  Tensor x = tensor_from<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  x.set_requires_grad(true);
  const Tensor t = ag::transpose(x, 0, 1);                 // (3, 2)
  const Tensor row = ag::narrow(t, 0, 1, 1);               // x[:, 1] as (1, 2)
  ag::backward(ag::sum(ag::mul_scalar(row, 10.0)));
  CHECK(to_vector(x.grad()) == std::vector<double>{0, 10, 0, 0, 10, 0});
}

// See Note [Gradient ownership] (lib/autograd/engine.cpp): the engine keeps a fresh gradient
// as .grad without a copy and sums into a pending gradient in place, but only into memory
// nothing else can see: not the caller's seed, not a handle passed to two inputs.
TEST_CASE("in-place gradient accumulation never writes into shared memory", "[autograd]") {
  SECTION("the seed passed through to two inputs of one node") {
    Tensor x = tensor_from<double>({1, 2, 3}, {3});
    x.set_requires_grad(true);
    const Tensor a = ag::mul_scalar(x, 2.0);
    const Tensor seed = tensor_from<double>({1, -1, 0.5}, {3});
    ag::backward(ag::add(a, a), seed);  // add passes the seed handle to both edges, into one node
    CHECK(to_vector(seed) == std::vector<double>{1, -1, 0.5});
    CHECK(to_vector(x.grad()) == std::vector<double>{4, -4, 2});
  }
  SECTION("two leaves given the same gradient handle get separate .grad memory") {
    Tensor p = tensor_from<double>({1, 2}, {2}), q = tensor_from<double>({3, 4}, {2});
    p.set_requires_grad(true);
    q.set_requires_grad(true);
    ag::backward(ag::sum(ag::mul_scalar(ag::add(p, q), 3.0)));
    CHECK(p.grad().storage() != q.grad().storage());
    ops::add_(p.grad(), ones({2}, DType::f64));
    CHECK(to_vector(p.grad()) == std::vector<double>{4, 4});
    CHECK(to_vector(q.grad()) == std::vector<double>{3, 3});
  }
  SECTION("a node reached by three paths sums all three") {
    Tensor x = tensor_from<double>({0.5, -1.0}, {2});
    x.set_requires_grad(true);
    const Tensor e = ag::exp(x);
    const Tensor y = ag::sum(ag::add(ag::add(ag::mul_scalar(e, 2.0), ag::mul(e, e)), ag::mul_scalar(e, 3.0)));
    ag::backward(y);  // d/dx (5 e^x + e^{2x}) = 5 e^x + 2 e^{2x}
    const std::vector<double> g = to_vector(x.grad());
    CHECK(g[0] == Approx(5 * std::exp(0.5) + 2 * std::exp(1.0)));
    CHECK(g[1] == Approx(5 * std::exp(-1.0) + 2 * std::exp(-2.0)));
  }
  SECTION("a .grad read by the caller is not changed by the next backward") {
    Tensor w = tensor_from<double>({1, 2}, {2});
    w.set_requires_grad(true);
    ag::backward(ag::sum(ag::mul_scalar(w, 2.0)));
    const Tensor first = w.grad();
    ag::backward(ag::sum(ag::mul_scalar(w, 5.0)));
    CHECK(to_vector(first) == std::vector<double>{2, 2});
    CHECK(to_vector(w.grad()) == std::vector<double>{7, 7});
  }
}

// See Note [Slice gradients] (lib/autograd/engine.cpp): split pieces of a computed tensor
// write into one uninitialised buffer; what no piece wrote must come out as zeros.
TEST_CASE("slices that got no gradient are zero in the input's gradient", "[autograd]") {
  Tensor x = tensor_from<double>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {2, 6});
  x.set_requires_grad(true);
  std::vector<Tensor> p = ag::split(ag::mul_scalar(x, 1.0), {2, 2, 2}, 1);
  const Tensor loss = ag::add(ag::sum(p[0]), ag::sum(ag::mul_scalar(p[2], 3.0)));  // p[1] unused
  { Tensor junk = full({2, 6}, std::nan(""), DType::f64); }  // freed memory the buffer may reuse
  ag::backward(loss);
  CHECK(to_vector(x.grad()) == std::vector<double>{1, 1, 0, 0, 3, 3, 1, 1, 0, 0, 3, 3});
}

// Note [Slice gradients]: pieces whose gradients are already the slices of one tensor of the
// input's shape (concat's gradient along dim 0 hands out such views) are taken as they are;
// the values must be those of the copying path, and memory a caller holds is never written.
TEST_CASE("slice gradients that are views of one tensor are adopted, never writing shared memory", "[autograd]") {
  SECTION("pieces that are their own slices of the concat's gradient") {
    Tensor x = tensor_from<double>({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2});
    x.set_requires_grad(true);
    std::vector<Tensor> p = ag::split(ag::mul_scalar(x, 2.0), {1, 3}, 0);
    const Tensor weights = tensor_from<double>({1, -2, 3, 0.5, -1, 4, 2, -3}, {4, 2});
    ag::backward(ag::sum(ag::mul(ag::mul_scalar(ag::concat({p[0], p[1]}, 0), 3.0), weights)));
    std::vector<double> expected = to_vector(weights);
    for (double& e : expected) e *= 6;  // d/dx Σ 3·2x·w
    CHECK(to_vector(x.grad()) == expected);
  }
  SECTION("a piece that is no slice of the adopted tensor is copied into it") {
    Tensor x = tensor_from<double>({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2});
    Tensor other = tensor_from<double>({1, 1, 1, 1}, {2, 2});
    x.set_requires_grad(true);
    other.set_requires_grad(true);
    std::vector<Tensor> p = ag::split(ag::mul_scalar(x, 2.0), {2, 2}, 0);
    const Tensor weights = tensor_from<double>({1, -2, 3, 0.5, -1, 4, 2, -3}, {4, 2});
    // p[0]'s gradient: the first half of concat's (4, 2) gradient, whose second half is other's.
    const Tensor head = ag::sum(ag::mul(ag::concat({p[0], other}, 0), weights));
    ag::backward(ag::add(head, ag::sum(ag::mul_scalar(p[1], 5.0))));
    CHECK(to_vector(x.grad()) == std::vector<double>{2, -4, 6, 1, 10, 10, 10, 10});
    CHECK(to_vector(other.grad()) == std::vector<double>{-1, 4, 2, -3});
  }
  SECTION("a gap in a caller's tensor is not zero-filled in place") {
    Tensor x = tensor_from<double>({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2});
    x.set_requires_grad(true);
    std::vector<Tensor> p = ag::split(ag::mul_scalar(x, 2.0), {2, 2}, 0);
    const Tensor caller = tensor_from<double>({1, -1, 2, -2, 9, 9, 9, 9}, {4, 2});
    ag::backward(p[0], caller.narrow(0, 0, 2));  // the seed: the first half of a tensor of x's shape
    CHECK(to_vector(caller) == std::vector<double>{1, -1, 2, -2, 9, 9, 9, 9});
    CHECK(to_vector(x.grad()) == std::vector<double>{2, -2, 4, -4, 0, 0, 0, 0});
  }
}

// See Note [Sparse gradients]: a table used by an embedding and by a head (tied) gets the
// head's dense gradient first; the embedding's rows are then added into it in place.
TEST_CASE("a tied table's gradient sums the head's and the embedding's rows without a second table", "[autograd]") {
  const int64_t V = 1024, C = 32, N = 7;
  Tensor w = random_normal({V, C}, 5, "w", 0.0, 1.0, {}, {}, DType::f64);
  w.set_requires_grad(true);
  const Tensor ids = tensor_from<int64_t>({3, 1000, 3, 0, 77, 3, 1023}, {N});
  const Tensor h = random_normal({N, C}, 6, "h", 0.0, 1.0, {}, {}, DType::f64);
  const Tensor a = random_normal({N, C}, 7, "a", 0.0, 1.0, {}, {}, DType::f64);
  const Tensor b = random_normal({N, V}, 8, "b", 0.0, 1.0, {}, {}, DType::f64);
  // loss = Σ a ⊙ embedding(w, ids) + Σ b ⊙ (h wᵀ)
  const Tensor loss =
      ag::add(ag::sum(ag::mul(ag::embedding(w, ids), a)), ag::sum(ag::mul(ag::matmul(h, w, false, true), b)));
  const size_t table_bytes = static_cast<size_t>(V * C) * sizeof(double);
  const size_t before = cpu_memory_usage().in_use;
  reset_cpu_peak_memory();
  ag::backward(loss);
  // The head's gradient is one table; a dense embedding gradient would be a second (measured:
  // 1.01 tables with the sparse form, 1.78 without; saved tensors freed meanwhile offset some).
  CHECK(cpu_memory_usage().peak - before < table_bytes * 3 / 2);
  // Naive: dw[v, c] = Σ_n b[n, v] h[n, c] + Σ_{n: ids[n] = v} a[n, c].
  const std::vector<double> hv = to_vector(h), av = to_vector(a), bv = to_vector(b), id = to_vector(ids);
  std::vector<double> expected(static_cast<size_t>(V * C), 0.0);
  for (int64_t v = 0; v < V; ++v) {
    for (int64_t c = 0; c < C; ++c) {
      double s = 0;
      for (int64_t n = 0; n < N; ++n) s += bv[static_cast<size_t>(n * V + v)] * hv[static_cast<size_t>(n * C + c)];
      for (int64_t n = 0; n < N; ++n) {
        if (static_cast<int64_t>(id[static_cast<size_t>(n)]) == v) s += av[static_cast<size_t>(n * C + c)];
      }
      expected[static_cast<size_t>(v * C + c)] = s;
    }
  }
  const std::vector<double> got = to_vector(w.grad());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - expected[i]));
  CHECK(worst < 1e-12);
}
