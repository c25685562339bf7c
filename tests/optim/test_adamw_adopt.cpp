// AdamW built over moments it adopts (a strategy switch's): it continues exactly as the
// optimizer the moments came from (the reference: that optimizer taking the same steps), it
// shares the adopted tensors instead of copying them, and moments that do not match their
// parameters are refused by name.
#include <catch2/catch.hpp>

#include "lib/optim/adamw.h"
#include "lib/util/error.h"

using namespace hetu;

namespace {

std::vector<nn::NamedParameter> make_params() {
  Tensor w = tensor_from<float>({0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 1.5f}, {2, 3});
  Tensor b = tensor_from<float>({0.1f, -0.2f, 0.3f}, {3});
  return {{"w", w.set_requires_grad(true)}, {"b", b.set_requires_grad(true)}};
}

void set_grads(const std::vector<nn::NamedParameter>& params, float scale) {
  for (const nn::NamedParameter& p : params) {
    std::vector<float> g(static_cast<size_t>(p.tensor.numel()));
    for (size_t i = 0; i < g.size(); ++i) g[i] = scale * (static_cast<float>(i) - 1.5f);
    p.tensor.set_grad(tensor_from(g, p.tensor.shape()));
  }
}

}  // namespace

TEST_CASE("adamw over adopted moments continues as the optimizer they came from", "[optim]") {
  const optim::AdamWConfig config{0.9, 0.95, 1e-8, 0.1};
  std::vector<nn::NamedParameter> first = make_params();
  optim::AdamW original(first, config);
  set_grads(first, 1.0f);
  original.step(0.01);
  // A second copy of the parameters and moments, adopted by a new optimizer.
  std::vector<nn::NamedParameter> second;
  for (const nn::NamedParameter& p : first) second.push_back({p.name, p.tensor.clone().set_requires_grad(true)});
  std::vector<nn::NamedParameter> moments;
  for (const nn::NamedParameter& s : original.state()) moments.push_back({s.name, s.tensor.clone()});
  optim::AdamW adopted(second, config, moments);
  adopted.set_steps_taken(original.steps_taken());
  CHECK(adopted.state()[0].tensor.same(moments[0].tensor));  // shared, not copied
  for (float scale : {0.5f, -2.0f}) {
    set_grads(first, scale);
    set_grads(second, scale);
    original.step(0.01, 0.8);
    adopted.step(0.01, 0.8);
  }
  for (size_t i = 0; i < first.size(); ++i) CHECK(to_vector(second[i].tensor) == to_vector(first[i].tensor));
  for (size_t i = 0; i < moments.size(); ++i)
    CHECK(to_vector(adopted.state()[i].tensor) == to_vector(original.state()[i].tensor));
}

TEST_CASE("adamw refuses moments that do not match their parameters", "[optim]") {
  std::vector<nn::NamedParameter> params = make_params();
  const optim::AdamWConfig config;
  std::vector<nn::NamedParameter> state = optim::AdamW(params, config).state();
  std::vector<nn::NamedParameter> swapped = state;
  std::swap(swapped[0], swapped[1]);  // v before m
  CHECK_THROWS_WITH(optim::AdamW(params, config, swapped), Catch::Contains("optim.m/w"));
  std::vector<nn::NamedParameter> misshapen = state;
  misshapen[2].tensor = zeros({4});
  CHECK_THROWS_WITH(optim::AdamW(params, config, misshapen), Catch::Contains("optim.m/b is (4,)"));
  CHECK_THROWS_WITH(optim::AdamW(params, config, {state[0]}), Catch::Contains("1 moments for 2 parameters"));
}
