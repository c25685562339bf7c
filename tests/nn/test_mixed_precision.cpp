// Mixed precision in the layers (nn::compute_copy): a layer meeting activations of another
// dtype computes with a cast copy of its f32 parameters and hands back f32 gradients; with
// matching dtypes nothing is copied. The reference is the same layer computed by hand in
// double from the f32 values (a naive loop), so the test fails if a cast is missing, the
// gradient lands in the wrong dtype, or it is not the upcast of the f64 gradient.
#include <catch2/catch.hpp>

#include "lib/autograd/functions.h"
#include "lib/nn/linear.h"
#include "lib/nn/norm.h"

namespace hetu::nn {
namespace {

Tensor ramp(const Shape& shape, double scale, double shift) {
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = scale * std::sin(0.7 * static_cast<double>(i) + shift);
  return tensor_from(v, shape);
}

}  // namespace

TEST_CASE("compute_copy: same dtype is the parameter itself, another dtype a differentiable cast", "[nn]") {
  Tensor p = ramp({3}, 1.0, 0.0).to(DType::f32);
  p.set_requires_grad(true);
  CHECK(compute_copy(p, ramp({2}, 1.0, 0.0).to(DType::f32)).same(p));
  const Tensor copy = compute_copy(p, ramp({2}, 1.0, 0.0));  // f64 activation
  CHECK(copy.dtype() == DType::f64);
  autograd::backward(autograd::sum(autograd::mul_scalar(copy, 2.0)));
  REQUIRE(p.grad().defined());
  CHECK(p.grad().dtype() == DType::f32);
  CHECK(to_vector(p.grad()) == std::vector<double>{2, 2, 2});
}

TEST_CASE("Linear and LayerNorm with f32 weights on f64 activations: f64 outputs, f32 gradients", "[nn]") {
  const int64_t n = 4, in = 5, out = 3;
  Linear linear(ParamInit{7, "fc.", nullptr}, in, out, /*bias=*/true);
  linear.bias.copy_from(ramp({out}, 0.1, 1.0));  // nonzero, so the bias path matters
  LayerNorm norm(ParamInit{7, "ln.", nullptr}, out, 1e-5);
  norm.weight.copy_from(ramp({out}, 0.5, 2.0));
  Tensor x = ramp({n, in}, 1.0, 0.3);  // f64
  x.set_requires_grad(true);
  const Tensor y = linear.forward(x);
  CHECK(y.dtype() == DType::f64);
  const Tensor z = norm.forward(y);
  CHECK(z.dtype() == DType::f64);
  autograd::backward(autograd::sum(autograd::mul(z, ramp({n, out}, 1.0, 0.9))));
  for (const Tensor& p : {linear.weight, linear.bias, norm.weight, norm.bias}) {
    REQUIRE(p.grad().defined());
    CHECK(p.grad().dtype() == DType::f32);
  }

  // Reference in double: y = x Wᵀ + b by a loop; dW[o][i] = Σ_n dy[n][o] x[n][i] and
  // db[o] = Σ_n dy[n][o], with dy the gradient of an all-f64 layer_norm at y (the autograd
  // suite checks that one by finite differences).
  const std::vector<double> w = to_vector(linear.weight), b = to_vector(linear.bias), xs = to_vector(x);
  std::vector<double> y_ref(static_cast<size_t>(n * out));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double acc = b[static_cast<size_t>(o)];
      for (int64_t i = 0; i < in; ++i) acc += xs[static_cast<size_t>(r * in + i)] * w[static_cast<size_t>(o * in + i)];
      y_ref[static_cast<size_t>(r * out + o)] = acc;
    }
  const std::vector<double> y_got = to_vector(y);
  for (size_t i = 0; i < y_ref.size(); ++i) CHECK(y_got[i] == Approx(y_ref[i]).margin(1e-12));

  Tensor y64 = tensor_from(y_ref, {n, out});
  y64.set_requires_grad(true);
  Tensor nw = norm.weight.to(DType::f64).detach(), nb = norm.bias.to(DType::f64).detach();
  autograd::backward(autograd::sum(autograd::mul(autograd::layer_norm(y64, nw, nb, 1e-5), ramp({n, out}, 1.0, 0.9))));
  const std::vector<double> dy = to_vector(y64.grad());
  const std::vector<double> dw = to_vector(linear.weight.grad()), db = to_vector(linear.bias.grad());
  for (int64_t o = 0; o < out; ++o) {
    double bias_grad = 0;
    for (int64_t r = 0; r < n; ++r) bias_grad += dy[static_cast<size_t>(r * out + o)];
    CHECK(db[static_cast<size_t>(o)] == Approx(bias_grad).epsilon(1e-6).margin(1e-7));
    for (int64_t i = 0; i < in; ++i) {
      double g = 0;
      for (int64_t r = 0; r < n; ++r) g += dy[static_cast<size_t>(r * out + o)] * xs[static_cast<size_t>(r * in + i)];
      CHECK(dw[static_cast<size_t>(o * in + i)] == Approx(g).epsilon(1e-6).margin(1e-7));
    }
  }
}

TEST_CASE("Module::to on the CPU keeps every handle pointing at the parameter", "[nn]") {
  Linear linear(ParamInit{7, "fc.", nullptr}, 2, 2, true);
  const Tensor handle = linear.weight;
  linear.to(Device::cpu());
  CHECK(handle.same(linear.weight));
  CHECK(linear.parameter("weight").same(linear.weight));
}

}  // namespace hetu::nn
