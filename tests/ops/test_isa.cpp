// The kernels that run_isa compiles per instruction-set level (lib/ops/cpu/isa.h; Note
// [Kernel ISA levels]) give the same results at every level this CPU supports: f32 GELU,
// layer norm, AdamW, attention (forward and backward) and column sums, against the same op in f64 (whose
// kernels the op tests check against naive loops), and level against level.
#include <string>
#include <vector>

#include "lib/ops/cpu/isa.h"
#include "lib/ops/ops.h"
#include "tests/ops/op_test_utils.h"

using namespace hetu;
using namespace hetu::test;
using hetu::ops::cpu::IsaLevel;

namespace {

const char* name(IsaLevel level) {
  return level == IsaLevel::avx512 ? "avx512" : level == IsaLevel::avx2 ? "avx2" : "baseline";
}

// Every output of the f32 kernels under test, in order, for one set of inputs.
std::vector<Tensor> run_all(DType dtype) {
  std::vector<Tensor> outputs;
  auto input = [&](const Shape& shape, uint64_t seed, double low = -3.0, double high = 3.0) {
    return random_tensor(shape, dtype, seed, low, high);
  };
  const Tensor x = input({3, 37, 129}, 1), g = input({3, 37, 129}, 2, -1.0, 1.0);
  outputs.push_back(ops::gelu(x));
  outputs.push_back(ops::gelu_backward(g, x));

  const Tensor w = input({129}, 3), b = input({129}, 4);
  const ops::LayerNormResult ln = ops::layer_norm(x, w, b, 1e-5);
  const ops::LayerNormGrads lng = ops::layer_norm_backward(g, x, w, ln.mean, ln.rstd);
  outputs.insert(outputs.end(), {ln.out, ln.mean, ln.rstd, lng.dx, lng.dweight, lng.dbias});

  Tensor param = input({40000}, 5, -1.0, 1.0), m = zeros({40000}, dtype), v = zeros({40000}, dtype);
  for (int64_t step = 1; step <= 3; ++step) {
    ops::AdamWStep s;
    s.lr = 1e-2;
    s.weight_decay = 0.1;
    s.step = step;
    ops::adamw_update(param, input({40000}, 10 + static_cast<uint64_t>(step), -1.0, 1.0), m, v, s);
  }
  outputs.insert(outputs.end(), {param, m, v});

  const Tensor q = input({2, 4, 130, 16}, 20, -1.0, 1.0), k = input({2, 2, 130, 16}, 21, -1.0, 1.0);
  const Tensor val = input({2, 2, 130, 16}, 22, -1.0, 1.0), dout = input({2, 4, 130, 16}, 23, -1.0, 1.0);
  const ops::AttentionResult att = ops::attention(q, k, val, 0.5);
  const ops::AttentionGrads ag = ops::attention_backward(dout, q, k, val, att.out, att.lse, 0.5);
  outputs.insert(outputs.end(), {att.out, att.lse, ag.dq, ag.dk, ag.dv});

  outputs.push_back(ops::sum(input({64, 4, 700}, 30), {0, 1}));  // column sums (a bias gradient), two blocks
  return outputs;
}

// Restores the level the process started with, whatever the test does.
struct LevelGuard {
  IsaLevel saved = ops::cpu::isa_level();
  ~LevelGuard() { ops::cpu::set_isa_level(saved); }
};

}  // namespace

TEST_CASE("vectorised kernels agree at every instruction-set level", "[isa]") {
  LevelGuard guard;
  ops::cpu::set_isa_level(IsaLevel::baseline);
  const std::vector<Tensor> reference = run_all(DType::f64);
  std::vector<std::vector<double>> first;
  for (int level = 0; level <= static_cast<int>(ops::cpu::max_isa_level()); ++level) {
    ops::cpu::set_isa_level(static_cast<IsaLevel>(level));
    REQUIRE(static_cast<int>(ops::cpu::isa_level()) == level);
    const std::vector<Tensor> outputs = run_all(DType::f32);
    REQUIRE(outputs.size() == reference.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      INFO(name(static_cast<IsaLevel>(level)) << ", output " << i);
      const std::vector<double> expected = to_vector(reference[i]);
      double scale = 1.0;
      for (double e : expected) scale = std::max(scale, std::fabs(e));
      CHECK(max_abs_diff(outputs[i], expected) <= tolerance(DType::f32, 4 * scale));
      if (level == 0) {
        first.push_back(to_vector(outputs[i]));
      } else {  // level against baseline: a few ulp apart at most
        CHECK(max_abs_diff(outputs[i], first[i]) <= tolerance(DType::f32, 4 * scale));
      }
    }
  }
}

TEST_CASE("set_isa_level caps at what the CPU supports", "[isa]") {
  LevelGuard guard;
  ops::cpu::set_isa_level(IsaLevel::avx512);
  CHECK(ops::cpu::isa_level() == ops::cpu::max_isa_level());
  ops::cpu::set_isa_level(IsaLevel::baseline);
  CHECK(ops::cpu::isa_level() == IsaLevel::baseline);
}
