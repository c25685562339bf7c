// nn::parallel_cross_entropy over 2 and 3 ranks (threads with an in-process communicator)
// against the single-device cross-entropy in f64: the loss on every rank, and each rank's
// logits gradient = its columns of the single-device gradient (0 in padding columns), with
// ignored targets, a global normalizer, targets in every shard, a vocabulary that leaves
// padding on the last rank, logits that are a leaf or an op's output, and both seedings of
// the duplicated loss. Also: no node under NoGradGuard, and the errors.
#include <catch2/catch.hpp>

#include <cmath>

#include "lib/autograd/grad_mode.h"
#include "lib/core/tensor_random.h"
#include "tests/nn/parallel_cross_entropy_case.h"

using namespace hetu;
using namespace hetu::test;

namespace {

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

// N = 7 rows over V = 11 classes; targets in every shard of tp 2 and 3, two ignored.
const Tensor kTargets = tensor_from(std::vector<int64_t>{0, 10, -100, 5, 3, 7, -100}, {7});

}  // namespace

TEST_CASE("parallel_cross_entropy matches the single-device loss and gradient", "[parallel_cross_entropy]") {
  const int64_t N = 7, V = 11;
  const Tensor whole = random_uniform({N, V}, 21, "logits", -3.0, 3.0, {}, {}, DType::f64);
  for (DType dtype : {DType::f64, DType::f32}) {
    const double tol = dtype == DType::f64 ? 1e-12 : 2e-6;
    for (int64_t tp : {2, 3}) {
      for (double normalizer : {0.0, 10.0}) {
        for (bool through_op : {false, true}) {
          for (Seeds seeds : {Seeds::first_rank, Seeds::every_rank}) {
            INFO(to_string(dtype) << " tp " << tp << " normalizer " << normalizer << " through_op " << through_op
                                  << " every rank seeds " << (seeds == Seeds::every_rank));
            const CrossEntropyReference ref = reference_cross_entropy(whole, kTargets, normalizer);
            const CrossEntropyRun run =
                run_parallel_cross_entropy(whole, kTargets, tp, Device::cpu(), dtype, normalizer, seeds, through_op);
            const int64_t C = (V + tp - 1) / tp;
            // Each rank's seed is a partial gradient of the duplicated loss: they add up.
            const double factor = seeds == Seeds::every_rank ? static_cast<double>(tp) : 1.0;
            for (int64_t r = 0; r < tp; ++r) {
              INFO("rank " << r);
              CHECK(std::fabs(run.loss[static_cast<size_t>(r)] - ref.loss) <= tol * std::max(1.0, std::fabs(ref.loss)));
              CHECK(max_abs_diff(run.grad[static_cast<size_t>(r)], reference_shard_grad(ref.grad, N, V, r, C, factor)) <=
                    tol);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("parallel_cross_entropy stays finite and exact on extreme logits", "[parallel_cross_entropy]") {
  // The row max sits on another rank than the target, 1e4 apart: exp would overflow unshifted.
  const Tensor whole = tensor_from(std::vector<double>{1e4, 0, -1e4, 5, 1e4, 1e4, 0, 0}, {2, 4});
  const Tensor targets = tensor_from(std::vector<int64_t>{3, 0}, {2});
  const CrossEntropyReference ref = reference_cross_entropy(whole, targets, 0);
  const CrossEntropyRun run = run_parallel_cross_entropy(whole, targets, 2, Device::cpu(), DType::f64, 0,
                                                         Seeds::first_rank, false);
  CHECK(std::fabs(ref.loss - (1e4 - 5 + std::log(2.0)) / 2) < 1e-9);
  for (int64_t r = 0; r < 2; ++r) {
    CHECK(std::fabs(run.loss[static_cast<size_t>(r)] - ref.loss) < 1e-9);
    CHECK(max_abs_diff(run.grad[static_cast<size_t>(r)], reference_shard_grad(ref.grad, 2, 4, r, 2, 1.0)) < 1e-12);
  }
}

TEST_CASE("parallel_cross_entropy records no node without grad mode, and checks its inputs", "[parallel_cross_entropy]") {
  const Tensor whole = random_uniform({3, 6}, 22, "logits", -1.0, 1.0);
  const Tensor targets = tensor_from(std::vector<int64_t>{1, 5, 2}, {3});
  std::vector<int> recorded(2, -1);
  std::vector<std::string> errors(2);
  ThreadGroup(2).run([&](int64_t r, Communicator& comm) {
    const nn::TensorParallel tp(&comm, DeviceGroup::range(0, 2), r, nn::group_placements({}, DeviceGroup::range(0, 2)));
    Tensor logits = padded_shard(whole, r, 3);
    logits.set_requires_grad(true);
    {
      autograd::NoGradGuard no_grad;
      recorded[static_cast<size_t>(r)] = nn::parallel_cross_entropy(logits, targets, r * 3, 6, &tp).requires_grad();
    }
    try {  // a target past the vocabulary: the same error on both ranks, before any collective
      nn::parallel_cross_entropy(logits, tensor_from(std::vector<int64_t>{1, 6, 2}, {3}), r * 3, 6, &tp);
    } catch (const Error& e) {
      errors[static_cast<size_t>(r)] = e.message();
    }
  });
  CHECK(recorded == std::vector<int>{0, 0});
  for (const std::string& e : errors) {
    CHECK(e == "cross_entropy_shard_stats: target 6 at row 1 is outside [0, 6) and is not ignore_index (-100)");
  }
}
