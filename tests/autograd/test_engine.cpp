// The tape engine: accumulation into .grad, shared inputs, no-grad mode, freed saved
// tensors, leaves as roots, detach, and errors for misuse.
#include <catch2/catch.hpp>

#include "lib/autograd/functions.h"

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
