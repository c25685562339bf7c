// adamw_update against a naive scalar loop of the formula (several steps, every grad layout,
// odd sizes, f32 and f64) and against torch.optim.AdamW (pinned values, see Note [AdamW
// reference]); global_norm against a double loop over tensors of mixed layouts; errors.
//
// Note [AdamW reference]: the pinned numbers come from Debian's PyTorch 1.13 (/usr/bin/python3):
//   p = torch.tensor(kParam0, dtype=torch.float64, requires_grad=True)
//   opt = torch.optim.AdamW([p], lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1)
//   for g in kGrads: p.grad = torch.tensor(g, dtype=torch.float64); opt.step()
// printing p after each step and exp_avg / exp_avg_sq after the last, with repr(float).
#include <cmath>

#include "lib/ops/ops.h"
#include "tests/ops/op_test_utils.h"

using namespace hetu;
using namespace hetu::test;

namespace {

constexpr Layout kLayouts[] = {Layout::contiguous, Layout::transposed, Layout::strided};

// The formula of ops.h, one element at a time, in double.
struct NaiveAdamW {
  std::vector<double> p, m, v;
  void step(const std::vector<double>& g, const ops::AdamWStep& s) {
    const double bc1 = 1 - std::pow(s.beta1, static_cast<double>(s.step));
    const double bc2 = 1 - std::pow(s.beta2, static_cast<double>(s.step));
    for (size_t i = 0; i < p.size(); ++i) {
      const double gi = s.grad_scale * g[i];
      m[i] = s.beta1 * m[i] + (1 - s.beta1) * gi;
      v[i] = s.beta2 * v[i] + (1 - s.beta2) * gi * gi;
      const double m_hat = m[i] / bc1, v_hat = v[i] / bc2;
      p[i] -= s.lr * (m_hat / (std::sqrt(v_hat) + s.eps) + s.weight_decay * p[i]);
    }
  }
};

}  // namespace

TEST_CASE("adamw_update matches a naive loop over several steps", "[optimizer]") {
  ops::AdamWStep plain;
  plain.lr = 1e-2;
  ops::AdamWStep decayed;
  decayed.lr = 3e-2;
  decayed.beta1 = 0.8;
  decayed.beta2 = 0.95;
  decayed.eps = 1e-6;
  decayed.weight_decay = 0.1;
  ops::AdamWStep clipped = decayed;  // a clipping factor folded into the update
  clipped.grad_scale = 0.3;
  uint64_t seed = 1;
  for (DType dtype : {DType::f32, DType::f64}) {
    // The last shape is past the kernel's threading grain.
    for (const Shape& shape : {Shape{1}, Shape{7}, Shape{33, 7}, Shape{3, 129}, Shape{129, 257}}) {
      for (Layout layout : kLayouts) {
        for (const ops::AdamWStep* hyper : {&plain, &decayed, &clipped}) {
          const Tensor param = random_tensor(shape, dtype, seed++, -2.0, 2.0);
          const Tensor m = zeros(shape, dtype), v = zeros(shape, dtype);
          NaiveAdamW ref{to_vector(param), to_vector(m), to_vector(v)};
          ops::AdamWStep s = *hyper;
          INFO(shape_str(shape) << " grad " << to_string(layout) << " " << to_string(dtype) << " wd "
                                << s.weight_decay << " grad_scale " << s.grad_scale);
          for (s.step = 1; s.step <= 5; ++s.step) {
            const Tensor grad = with_layout(random_tensor(shape, dtype, seed++), layout);
            ops::adamw_update(param, grad, m, v, s);
            ref.step(to_vector(grad), s);
            INFO("step " << s.step);
            CHECK(max_abs_diff(m, ref.m) <= tolerance(dtype, 2));
            CHECK(max_abs_diff(v, ref.v) <= tolerance(dtype, 2));
            CHECK(max_abs_diff(param, ref.p) <= tolerance(dtype, 20));
          }
        }
      }
    }
  }
}

TEST_CASE("adamw_update matches 3 steps of torch.optim.AdamW", "[optimizer]") {
  // See Note [AdamW reference].
  const std::vector<double> kParam0 = {0.5, -1.25, 2.0, 0.0, -0.1, 3.0};
  const std::vector<std::vector<double>> kGrads = {{0.1, -0.2, 0.3, 0.0, 5.0, -1e-3},
                                                   {-0.4, 0.25, 0.3, 1.0, -5.0, 2e-3},
                                                   {0.05, 0.0, -0.7, -2.0, 4.0, 0.5}};
  const std::vector<std::vector<double>> kTorchParam = {
      {0.4895000009999999, -1.2387500005, 1.9880000003333334, 0.0, -0.10989999998, 3.006999900001},
      {0.4946055357475128, -1.2391385730443174, 1.9760120006663333, -0.0074413681304592956, -0.10926378419159895,
       3.00033188798144},
      {0.49763497777787113, -1.2391573595024006, 1.9754956961830272, -0.0042910650917241475, -0.11194756168201349,
       2.99093083574191}};
  const std::vector<double> kTorchM = {-0.022899999999999997, 0.006299999999999997, -0.018699999999999987,
                                       -0.10999999999999997,  0.3549999999999999,   0.05009899999999999};
  const std::vector<double> kTorchV = {0.00017232001000000018, 0.0001023575400000001, 0.0006697300900000005,
                                       0.004999000000000004,   0.06592502500000005,   0.00025000499400100023};
  for (DType dtype : {DType::f32, DType::f64}) {
    const double tol = dtype == DType::f64 ? 1e-14 : 2e-6;
    const Tensor param = tensor_from(kParam0, {2, 3}).to(dtype);
    const Tensor m = zeros({2, 3}, dtype), v = zeros({2, 3}, dtype);
    ops::AdamWStep s;
    s.lr = 0.01;
    s.weight_decay = 0.1;
    for (s.step = 1; s.step <= 3; ++s.step) {
      const Tensor grad = tensor_from(kGrads[static_cast<size_t>(s.step - 1)], {2, 3}).to(dtype);
      ops::adamw_update(param, grad, m, v, s);
      INFO(to_string(dtype) << " step " << s.step);
      CHECK(max_abs_diff(param, kTorchParam[static_cast<size_t>(s.step - 1)]) <= tol);
    }
    INFO(to_string(dtype));
    CHECK(max_abs_diff(m, kTorchM) <= tol);
    CHECK(max_abs_diff(v, kTorchV) <= tol);
  }
}

TEST_CASE("adamw_update argument errors", "[optimizer]") {
  const Tensor p = zeros({4, 3}), g = zeros({4, 3}), m = zeros({4, 3}), v = zeros({4, 3});
  const ops::AdamWStep s;
  CHECK_THROWS_WITH(ops::adamw_update(p, zeros({3, 4}), m, v, s),
                    Catch::StartsWith("adamw_update: grad shape (3, 4) differs from param shape (4, 3)"));
  CHECK_THROWS_WITH(ops::adamw_update(p, g, zeros({12}), v, s),
                    Catch::StartsWith("adamw_update: m shape (12,) differs from param shape (4, 3)"));
  CHECK_THROWS_WITH(ops::adamw_update(p, g, m, zeros({4, 3, 1}), s),
                    Catch::StartsWith("adamw_update: v shape (4, 3, 1) differs"));
  CHECK_THROWS_WITH(ops::adamw_update(p, g, m, zeros({4, 3}, DType::f64), s),
                    Catch::StartsWith("adamw_update: dtypes differ (f32 and f64)"));
  CHECK_THROWS_WITH(ops::adamw_update(p.to(DType::bf16), g.to(DType::bf16), m.to(DType::bf16), v.to(DType::bf16), s),
                    Catch::Contains("op adamw_update not implemented") && Catch::Contains("bf16"));
  const Tensor strided = zeros({4, 6}).slice(1, 0, 6, 2);
  CHECK_THROWS_WITH(ops::adamw_update(strided, g, m, v, s),
                    Catch::StartsWith("adamw_update: param must be contiguous"));
  CHECK_THROWS_WITH(ops::adamw_update(p, g, strided, v, s), Catch::StartsWith("adamw_update: m must be contiguous"));
  CHECK_THROWS_WITH(ops::adamw_update(p, g, m, zeros({3, 4}).transpose(0, 1), s),
                    Catch::StartsWith("adamw_update: v must be contiguous"));
  ops::AdamWStep zero_step;
  zero_step.step = 0;
  CHECK_THROWS_WITH(ops::adamw_update(p, g, m, v, zero_step), Catch::StartsWith("adamw_update: step must be >= 1"));
  ops::AdamWStep bad_beta;
  bad_beta.beta2 = 1.0;
  CHECK_THROWS_WITH(ops::adamw_update(p, g, m, v, bad_beta),
                    Catch::StartsWith("adamw_update: betas must lie in [0, 1)"));
  ops::adamw_update(p, g.transpose(0, 1).contiguous().transpose(0, 1), m, v, s);  // a strided grad is fine
}

TEST_CASE("global_norm sums squares over tensors of any layout in double", "[optimizer]") {
  uint64_t seed = 900;
  std::vector<Tensor> tensors;
  double expected = 0;
  // Mixed dtypes, layouts and odd sizes; the last tensor spans many reduction blocks.
  for (const Shape& shape : {Shape{1}, Shape{7}, Shape{33, 7}, Shape{3, 129}, Shape{2, 7, 33}, Shape{129, 257}}) {
    for (DType dtype : {DType::f32, DType::f64}) {
      const Layout layout = kLayouts[tensors.size() % 3];
      tensors.push_back(with_layout(random_tensor(shape, dtype, seed++, -3.0, 3.0), layout));
      for (double x : to_vector(tensors.back())) expected += x * x;
      const double single = ops::global_norm({tensors.back()});
      double single_expected = 0;
      for (double x : to_vector(tensors.back())) single_expected += x * x;
      INFO(shape_str(shape) << " " << to_string(dtype) << " " << to_string(layout));
      CHECK(std::fabs(single - std::sqrt(single_expected)) <= 1e-12 * std::sqrt(single_expected));
    }
  }
  CHECK(std::fabs(ops::global_norm(tensors) - std::sqrt(expected)) <= 1e-12 * std::sqrt(expected));
  CHECK(ops::global_norm({}) == 0.0);
  CHECK(ops::global_norm({zeros({0, 3}), tensor_from<double>({3, 4}, {2})}) == 5.0);
  // f32 values squared in double: 1e20² overflows float but not the double sum.
  CHECK(std::fabs(ops::global_norm({full({4}, 1e20, DType::f32)}) / 2e20 - 1) <= 1e-7);
  CHECK_THROWS_WITH(ops::global_norm({zeros({2}), tensor_from<int32_t>({1}, {1})}),
                    Catch::Contains("op global_norm not implemented") && Catch::Contains("i32"));
  CHECK_THROWS_WITH(ops::global_norm({zeros({2}), Tensor()}),
                    Catch::StartsWith("global_norm: an input tensor is undefined"));
}
