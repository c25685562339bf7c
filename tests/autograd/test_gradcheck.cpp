// Gradient checks: for every differentiable op in the catalogue (lib/ops/op_list.h) and
// every differentiable view, the tape's gradient of sum(f(x) ∘ G) against central finite
// differences in f64. The suite fails when a differentiable op has no case here.
#include <catch2/catch.hpp>

#include <functional>
#include <set>

#include "lib/autograd/backward_rules.h"
#include "lib/autograd/functions.h"
#include "lib/core/rng.h"
#include "lib/ops/op_list.h"

using namespace hetu;
namespace ag = hetu::autograd;

namespace {

Tensor rand64(const Shape& shape, uint64_t seed, double low = -1.0, double high = 1.0) {
  Tensor t = empty(shape, DType::f64);
  CounterRng(seed, "gradcheck").fill_uniform(t.data<double>(), 0, t.numel(), low, high);
  return t;
}

Tensor leaf(const Shape& shape, uint64_t seed, double low = -1.0, double high = 1.0) {
  Tensor t = rand64(shape, seed, low, high);
  t.set_requires_grad(true);
  return t;
}

struct GradCase {
  std::string op;     // catalogue or view name
  std::string label;
  std::function<std::vector<Tensor>()> make_inputs;  // f64; those requiring grad are checked
  std::function<Tensor(const std::vector<Tensor>&)> fn;
  double step = 1e-6;
  double tolerance = 1e-6;  // relative to max(1, |numeric|)
};

Tensor ids(std::vector<int64_t> values, const Shape& shape) { return tensor_from(values, shape); }

std::vector<GradCase> cases() {
  using V = std::vector<Tensor>;
  std::vector<GradCase> c;
  auto one = [&](std::string op, std::function<Tensor(const Tensor&)> f, Shape shape = {3, 4}, double lo = -1,
                 double hi = 1) {
    c.push_back({op, op, [=] { return V{leaf(shape, 7, lo, hi)}; }, [f](const V& x) { return f(x[0]); }});
  };
  c.push_back({"matmul", "2d", [] { return V{leaf({3, 4}, 1), leaf({4, 5}, 2)}; },
               [](const V& x) { return ag::matmul(x[0], x[1]); }});
  c.push_back({"matmul", "batched, trans flags", [] { return V{leaf({2, 4, 3}, 1), leaf({2, 5, 4}, 2)}; },
               [](const V& x) { return ag::matmul(x[0], x[1], true, true); }});
  c.push_back({"matmul", "linear layer: 3-d input, 2-d weight transposed", [] { return V{leaf({2, 3, 4}, 1), leaf({5, 4}, 2)}; },
               [](const V& x) { return ag::matmul(x[0], x[1], false, true); }});
  c.push_back({"matmul", "3-d transposed input, 2-d weight", [] { return V{leaf({2, 4, 3}, 1), leaf({4, 5}, 2)}; },
               [](const V& x) { return ag::matmul(x[0], x[1], true, false); }});
  c.push_back({"matmul", "broadcast batch", [] { return V{leaf({2, 1, 3, 4}, 1), leaf({3, 4, 2}, 2)}; },
               [](const V& x) { return ag::matmul(x[0], x[1]); }});
  c.push_back({"linear", "3-d input with bias", [] { return V{leaf({2, 3, 4}, 30), leaf({5, 4}, 31), leaf({5}, 32)}; },
               [](const V& x) { return ag::linear(x[0], x[1], x[2]); }});
  c.push_back({"linear", "with bias and residual", [] { return V{leaf({2, 3, 4}, 35), leaf({5, 4}, 36), leaf({5}, 37), leaf({2, 3, 5}, 38)}; },
               [](const V& x) { return ag::linear(x[0], x[1], x[2], x[3]); }});
  c.push_back({"linear", "bias, 300 rows (two row pieces of the bias sums)", [] { return V{leaf({300, 2}, 39), leaf({3, 2}, 45), leaf({3}, 46)}; },
               [](const V& x) { return ag::linear(x[0], x[1], x[2]); }});
  c.push_back({"linear", "transposed input, no bias", [] { return V{leaf({4, 3}, 33), leaf({2, 4}, 34)}; },
               [](const V& x) { return ag::linear(ag::transpose(x[0], 0, 1), x[1], Tensor()); }});
  c.push_back({"linear_gelu", "3-d input with bias", [] { return V{leaf({2, 3, 4}, 40), leaf({5, 4}, 41), leaf({5}, 42)}; },
               [](const V& x) { return ag::linear_gelu(x[0], x[1], x[2]); }});
  c.push_back({"linear_gelu", "transposed input, no bias", [] { return V{leaf({4, 3}, 43), leaf({2, 4}, 44)}; },
               [](const V& x) { return ag::linear_gelu(ag::transpose(x[0], 0, 1), x[1], Tensor()); }});
  for (auto [name, fn] : {std::pair<const char*, Tensor (*)(const Tensor&, const Tensor&)>{"add", ag::add},
                          {"sub", ag::sub}, {"mul", ag::mul}, {"div", ag::div}}) {
    c.push_back({name, "broadcast", [] { return V{leaf({2, 3, 4}, 3), leaf({3, 1}, 4, 0.5, 2.0)}; },
                 [fn](const V& x) { return fn(x[0], x[1]); }});
  }
  one("add_scalar", [](const Tensor& x) { return ag::add_scalar(x, 1.5); });
  one("mul_scalar", [](const Tensor& x) { return ag::mul_scalar(x, -2.5); });
  one("neg", ag::neg);
  one("exp", ag::exp);
  one("log", ag::log, {3, 4}, 0.2, 2.0);
  one("sqrt", ag::sqrt, {3, 4}, 0.2, 2.0);
  one("rsqrt", ag::rsqrt, {3, 4}, 0.2, 2.0);
  one("tanh", ag::tanh);
  one("gelu", ag::gelu, {3, 7}, -3, 3);
  one("silu", ag::silu, {3, 7}, -3, 3);
  one("relu", ag::relu);  // random values are never within 1e-6 of the kink
  one("sum", [](const Tensor& x) { return ag::sum(x, {0, 2}); }, {2, 3, 4});
  one("sum", [](const Tensor& x) { return ag::sum(x); }, {2, 3});
  one("mean", [](const Tensor& x) { return ag::mean(x, {-1}, true); }, {2, 3, 4});
  one("max", [](const Tensor& x) { return ag::max(x, 1); }, {3, 5});
  one("softmax", ag::softmax, {3, 7});
  one("log_softmax", ag::log_softmax, {3, 7});
  c.push_back({"layer_norm", "x, weight, bias", [] { return V{leaf({2, 3, 8}, 5), leaf({8}, 6), leaf({8}, 7)}; },
               [](const V& x) { return ag::layer_norm(x[0], x[1], x[2], 1e-5); }});
  c.push_back({"rms_norm", "x, weight", [] { return V{leaf({2, 3, 8}, 5), leaf({8}, 6)}; },
               [](const V& x) { return ag::rms_norm(x[0], x[1], 1e-5); }});
  c.push_back({"embedding", "repeated ids", [] { return V{leaf({6, 4}, 8)}; },
               [](const V& x) { return ag::embedding(x[0], ids({1, 5, 1, 0, 3}, {5})); }});
  c.push_back({"rotary", "offset 3", [] { return V{leaf({2, 5, 2, 8}, 9)}; },
               [](const V& x) { return ag::rotary(x[0], 3, hetu::ops::rotary_frequencies(8, 10000.0)); }});
  c.push_back({"rotary", "positions restarting per document", [] { return V{leaf({2, 5, 2, 8}, 10)}; },
               [](const V& x) {
                 const std::vector<int64_t> positions = hetu::ops::segment_positions(std::vector<int64_t>{0, 2, 5, 6, 10});
                 return ag::rotary(x[0], positions, hetu::ops::rotary_frequencies(8, 10000.0));
               }});
  c.push_back({"attention", "GQA 4/2 heads, T=7", [] { return V{leaf({1, 4, 7, 4}, 10), leaf({1, 2, 7, 4}, 11), leaf({1, 2, 7, 4}, 12)}; },
               [](const V& x) { return ag::attention(x[0], x[1], x[2], 0.5); }});
  // The offsets die with the lambda's frame: the node must keep its own copy for the backward.
  c.push_back({"attention", "documents of 2, 1, 3 | 1, 5 tokens in two rows of 6, GQA 2/1",
               [] { return V{leaf({2, 2, 6, 3}, 17), leaf({2, 1, 6, 3}, 18), leaf({2, 1, 6, 3}, 19)}; },
               [](const V& x) {
                 const std::vector<int64_t> cu{0, 2, 3, 6, 7, 12};
                 return ag::attention(x[0], x[1], x[2], 0.7, cu);
               }});
  c.push_back({"cross_entropy", "mean with an ignored row", [] { return V{leaf({4, 6}, 13, -2, 2)}; },
               [](const V& x) { return ag::cross_entropy(x[0], ids({2, -100, 5, 0}, {4})); }});
  c.push_back({"linear_cross_entropy", "padding rows of the weight, an ignored row",
               [] { return V{leaf({5, 3}, 15), leaf({7, 3}, 16, -2, 2)}; },
               [](const V& x) { return ag::linear_cross_entropy(x[0], x[1], ids({4, -100, 0, 5, 2}, {5}), 6); }});
  c.push_back({"linear_cross_entropy", "global normalizer", [] { return V{leaf({3, 4}, 17), leaf({5, 4}, 18)}; },
               [](const V& x) { return ag::linear_cross_entropy(x[0], x[1], ids({1, 4, 0}, {3}), -1, -100, 10.0); }});
  c.push_back({"cross_entropy", "global normalizer", [] { return V{leaf({3, 5}, 14, -2, 2)}; },
               [](const V& x) { return ag::cross_entropy(x[0], ids({1, 4, 0}, {3}), -100, 10.0); }});
  c.push_back({"concat", "dim 1", [] { return V{leaf({2, 3}, 15), leaf({2, 2}, 16)}; },
               [](const V& x) { return ag::concat({x[0], x[1]}, 1); }});
  c.push_back({"split", "pieces recombined", [] { return V{leaf({5, 3}, 17)}; },
               [](const V& x) {
                 std::vector<Tensor> p = ag::split(x[0], {2, 3}, 0);
                 return ag::mul(p[0], ag::narrow(p[1], 0, 1, 2));
               }});
  // Pieces of a computed tensor: the engine writes their gradients into one buffer (Note
  // [Slice gradients], lib/autograd/engine.cpp); each case takes another of its paths.
  c.push_back({"split", "q/k/v of a computed tensor, all pieces used", [] { return V{leaf({2, 3, 6}, 20)}; },
               [](const V& x) {
                 std::vector<Tensor> p = ag::split(ag::exp(x[0]), {2, 2, 2}, -1);
                 return ag::mul(ag::transpose(p[0], 1, 2), ag::exp(ag::transpose(ag::add(p[1], p[2]), 1, 2)));
               }});
  c.push_back({"split", "a computed tensor, one piece unused", [] { return V{leaf({3, 5}, 21)}; },
               [](const V& x) {
                 std::vector<Tensor> p = ag::split(ag::exp(x[0]), {1, 3, 1}, 1);
                 return ag::mul(p[0], p[2]);
               }});
  c.push_back({"narrow", "overlapping slices and the whole of a computed tensor", [] { return V{leaf({4, 3}, 22)}; },
               [](const V& x) {
                 const Tensor h = ag::exp(x[0]);
                 const Tensor a = ag::mul(ag::narrow(h, 0, 0, 3), ag::narrow(h, 0, 1, 3));
                 return ag::add(ag::sum(ag::mul(h, h), {0}), ag::sum(a, {0}));  // the slices' gradients arrive first
               }});
  c.push_back({"narrow", "the whole of a computed tensor after slices with a gap", [] { return V{leaf({4, 3}, 24)}; },
               [](const V& x) {
                 const Tensor h = ag::exp(x[0]);
                 const Tensor a = ag::mul(ag::narrow(h, 0, 0, 1), ag::narrow(h, 0, 2, 2));
                 return ag::add(ag::sum(ag::mul(h, h), {0}), ag::sum(a, {0}));
               }});
  c.push_back({"narrow", "slices of a computed tensor along two dims", [] { return V{leaf({4, 4}, 23)}; },
               [](const V& x) {
                 const Tensor h = ag::exp(x[0]);
                 return ag::mul(ag::narrow(h, 0, 1, 2), ag::transpose(ag::narrow(h, 1, 2, 2), 0, 1));
               }});
  c.push_back({"index_select", "repeats along dim 1", [] { return V{leaf({3, 4}, 18)}; },
               [](const V& x) { return ag::index_select(x[0], 1, ids({3, 0, 3}, {3})); }});
  c.push_back({"cast", "through f32 and back", [] { return V{leaf({3, 4}, 19)}; },
               [](const V& x) { return ag::cast(ag::cast(x[0], DType::f32), DType::f64); }, 1e-3, 1e-3});
  // Views.
  one("reshape", [](const Tensor& x) { return ag::mul(ag::reshape(x, {4, 3}), ag::reshape(x, {4, 3})); });
  one("transpose", [](const Tensor& x) { return ag::exp(ag::transpose(x, 0, 1)); });
  one("permute", [](const Tensor& x) { return ag::exp(ag::permute(x, {2, 0, 1})); }, {2, 3, 4});
  one("narrow", [](const Tensor& x) { return ag::exp(ag::narrow(x, 1, 1, 2)); });
  one("expand", [](const Tensor& x) { return ag::exp(ag::expand(x, {2, 3, 4})); }, {3, 1});
  one("contiguous", [](const Tensor& x) { return ag::exp(ag::contiguous(ag::transpose(x, 0, 1))); });
  one("reshape", [](const Tensor& x) { return ag::squeeze(ag::unsqueeze(x, 1), 1); });
  return c;
}

// Σ f(x) ∘ G with the tape off.
double objective(const GradCase& gc, const std::vector<Tensor>& inputs, const Tensor& weights) {
  ag::NoGradGuard no_grad;
  const Tensor out = gc.fn(inputs).to(DType::f64);
  return ops::sum(ops::mul(out, weights)).item();
}

}  // namespace

TEST_CASE("every differentiable op in the catalogue has a backward rule and a gradient check", "[gradcheck]") {
  std::set<std::string> covered;
  for (const GradCase& gc : cases()) covered.insert(gc.op);
  for (const ops::OpInfo& op : ops::kOps) {
    if (!op.differentiable) continue;
    INFO("op " << op.name);
    CHECK(covered.count(std::string(op.name)) == 1);
    CHECK_NOTHROW(ag::find_rule(op.name));
  }
}

TEST_CASE("tape gradients equal central differences", "[gradcheck]") {
  uint64_t seed = 1000;
  for (const GradCase& gc : cases()) {
    DYNAMIC_SECTION(gc.op << ": " << gc.label) {
      std::vector<Tensor> inputs = gc.make_inputs();
      const Tensor out = gc.fn(inputs);
      REQUIRE(out.requires_grad());
      const Tensor weights = rand64(out.shape(), seed++);
      ag::backward(ag::sum(ag::mul(ag::cast(out, DType::f64), weights)));
      for (size_t i = 0; i < inputs.size(); ++i) {
        Tensor& x = inputs[i];
        if (!x.requires_grad()) continue;
        REQUIRE(x.grad().defined());
        REQUIRE(x.grad().shape() == x.shape());
        const std::vector<double> analytic = to_vector(x.grad());
        double* p = x.data<double>();
        for (int64_t e = 0; e < x.numel(); ++e) {
          const double saved = p[e];
          p[e] = saved + gc.step;
          const double up = objective(gc, inputs, weights);
          p[e] = saved - gc.step;
          const double down = objective(gc, inputs, weights);
          p[e] = saved;
          const double numeric = (up - down) / (2 * gc.step);
          INFO("input " << i << " element " << e << " numeric " << numeric << " analytic " << analytic[static_cast<size_t>(e)]);
          CHECK(std::fabs(numeric - analytic[static_cast<size_t>(e)]) <= gc.tolerance * std::max(1.0, std::fabs(numeric)));
        }
      }
    }
  }
}
