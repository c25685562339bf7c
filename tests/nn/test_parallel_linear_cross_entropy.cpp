// nn::parallel_linear_cross_entropy (the fused, vocab-parallel LM head + loss) over 2 and 3
// ranks (threads with an in-process communicator) against the unfused single-device path in
// f64 (autograd::matmul, then autograd::cross_entropy over the whole vocabulary): the loss on
// every rank, each rank's weight gradient = its rows of the single-device one (0 in padding
// rows, which hold huge values), and the ranks' partial hidden gradients summing to the
// single-device one; several rows per chunk (a ragged last chunk), ignored rows, both
// seedings of the duplicated loss, f32 and f64. One rank (no tp) too, and no node without grad.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>

#include "lib/autograd/grad_mode.h"
#include "lib/core/tensor_random.h"
#include "tests/nn/parallel_cross_entropy_case.h"

using namespace hetu;
using namespace hetu::test;

namespace {

struct Unfused {
  double loss;
  std::vector<double> dh, dw;  // (N, C), (V, C)
};

Unfused unfused_reference(const Tensor& h, const Tensor& w, const Tensor& targets, double normalizer) {
  Tensor hl = h.to(DType::f64).clone(), wl = w.to(DType::f64).clone();
  hl.set_requires_grad(true);
  wl.set_requires_grad(true);
  const Tensor loss = autograd::cross_entropy(autograd::matmul(hl, wl, false, true), targets, -100, normalizer);
  autograd::backward(loss);
  return {loss.item(), to_vector(hl.grad()), to_vector(wl.grad())};
}

// Rows [r·Vl, r·Vl + Vl) of w (V, C); rows past V are padding, filled with 40.
Tensor weight_shard(const Tensor& w, int64_t r, int64_t Vl) {
  const int64_t V = w.size(0), C = w.size(1);
  Tensor s = full({Vl, C}, 40.0, w.dtype());
  const int64_t real = std::max<int64_t>(0, std::min(Vl, V - r * Vl));
  if (real > 0) s.narrow(0, 0, real).copy_from(w.narrow(0, r * Vl, real));
  return s;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

// Sets an environment variable for one scope (the chunk size the op reads).
struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }
  const char* name_;
};

}  // namespace

TEST_CASE("parallel_linear_cross_entropy matches the unfused single-device head and loss",
          "[parallel_linear_cross_entropy]") {
  const int64_t N = 7, C = 4, V = 11;
  const Tensor h = random_uniform({N, C}, 31, "hidden", -2.0, 2.0, {}, {}, DType::f64);
  const Tensor w = random_uniform({V, C}, 32, "weight", -2.0, 2.0, {}, {}, DType::f64);
  const Tensor targets = tensor_from(std::vector<int64_t>{0, 10, -100, 5, 3, 7, -100}, {7});
  const ScopedEnv chunk("HETU_LM_HEAD_CHUNK_ROWS", "3");  // chunks of 3, 3, 1 rows
  for (DType dtype : {DType::f64, DType::f32}) {
    const double tol = dtype == DType::f64 ? 1e-12 : 1e-5;
    for (double normalizer : {0.0, 10.0}) {
      const Unfused ref = unfused_reference(h, w, targets, normalizer);
      for (int64_t tp : {1, 2, 3}) {
        for (Seeds seeds : {Seeds::first_rank, Seeds::every_rank}) {
          INFO(to_string(dtype) << " tp " << tp << " normalizer " << normalizer << " every rank seeds "
                                << (seeds == Seeds::every_rank));
          const int64_t Vl = (V + tp - 1) / tp;
          std::vector<double> loss(static_cast<size_t>(tp));
          std::vector<std::vector<double>> dh(static_cast<size_t>(tp)), dw(static_cast<size_t>(tp));
          ThreadGroup(tp).run([&](int64_t r, Communicator& comm) {
            const nn::TensorParallel parallel(&comm, DeviceGroup::range(0, tp), r, nn::group_placements({}, DeviceGroup::range(0, tp)));
            Tensor hl = h.to(dtype).clone(), wl = weight_shard(w, r, Vl).to(dtype);
            hl.set_requires_grad(true);
            wl.set_requires_grad(true);
            const Tensor l =
                nn::parallel_linear_cross_entropy(hl, wl, targets, r * Vl, V, tp == 1 ? nullptr : &parallel, normalizer);
            loss[static_cast<size_t>(r)] = l.item();
            const double seed = seeds == Seeds::every_rank || r == 0 ? 1.0 : 0.0;
            autograd::backward(l, full(l.shape(), seed, l.dtype(), l.device()));
            dh[static_cast<size_t>(r)] = to_vector(hl.grad());
            dw[static_cast<size_t>(r)] = to_vector(wl.grad());
          });
          // tp 1 has no group: its one seed is the gradient.
          const double factor = seeds == Seeds::every_rank && tp > 1 ? static_cast<double>(tp) : 1.0;
          std::vector<double> dh_sum(static_cast<size_t>(N * C), 0.0);
          for (int64_t r = 0; r < tp; ++r) {
            INFO("rank " << r);
            CHECK(std::fabs(loss[static_cast<size_t>(r)] - ref.loss) <= tol * std::fabs(ref.loss));
            for (size_t i = 0; i < dh_sum.size(); ++i) dh_sum[i] += dh[static_cast<size_t>(r)][i];
            std::vector<double> expected(static_cast<size_t>(Vl * C), 0.0);
            for (int64_t v = 0; v < Vl && r * Vl + v < V; ++v) {
              for (int64_t c = 0; c < C; ++c) {
                expected[static_cast<size_t>(v * C + c)] = factor * ref.dw[static_cast<size_t>((r * Vl + v) * C + c)];
              }
            }
            CHECK(max_abs_diff(dw[static_cast<size_t>(r)], expected) <= tol);
          }
          std::vector<double> expected_dh = ref.dh;
          for (double& x : expected_dh) x *= factor;
          CHECK(max_abs_diff(dh_sum, expected_dh) <= tol);
        }
      }
    }
  }
}

TEST_CASE("parallel_linear_cross_entropy records no node without grad mode", "[parallel_linear_cross_entropy]") {
  const Tensor h = random_uniform({3, 2}, 33, "hidden", -1.0, 1.0), w = random_uniform({6, 2}, 34, "weight", -1.0, 1.0);
  const Tensor targets = tensor_from(std::vector<int64_t>{1, 5, 2}, {3});
  std::vector<int> recorded(2, -1);
  std::vector<double> loss(2);
  ThreadGroup(2).run([&](int64_t r, Communicator& comm) {
    const nn::TensorParallel tp(&comm, DeviceGroup::range(0, 2), r, nn::group_placements({}, DeviceGroup::range(0, 2)));
    Tensor hl = h.clone(), wl = weight_shard(w, r, 3);
    hl.set_requires_grad(true);
    autograd::NoGradGuard no_grad;
    const Tensor l = nn::parallel_linear_cross_entropy(hl, wl, targets, r * 3, 6, &tp);
    recorded[static_cast<size_t>(r)] = l.requires_grad();
    loss[static_cast<size_t>(r)] = l.item();
  });
  CHECK(recorded == std::vector<int>{0, 0});
  const Unfused ref = unfused_reference(h, w, targets, 0);
  for (double l : loss) CHECK(std::fabs(l - ref.loss) <= 1e-5 * ref.loss);
}
