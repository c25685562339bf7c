// nn::parallel_cross_entropy with its logits and targets on the GPU, over 2 and 3 ranks that
// are threads sharing cuda:0 (tests/nn/thread_group_comm.h), against the single-device
// cross-entropy in f64 on the CPU of the same (dtype-rounded) logits: every device placement
// of the layer (statistics, gathered maxima, the packed all_reduce, the backward's seed) is
// exercised on one GPU. bf16 logits: f32 loss, bf16 gradients.
#include "tests/cuda/cuda_test_utils.h"
#include "tests/nn/parallel_cross_entropy_case.h"

using namespace hetu;
using namespace hetu::test;

TEST_CASE("cuda: parallel_cross_entropy over threads sharing one GPU matches one device", "[cuda]") {
  HT_REQUIRE_GPU();
  const int64_t N = 67;
  for (int64_t V : {1000, 1024}) {
    const Tensor whole = random_cpu({N, V}, 400 + static_cast<uint64_t>(V), -6, 6);
    std::vector<int64_t> t(static_cast<size_t>(N));
    for (size_t i = 0; i < t.size(); ++i) t[i] = i % 5 == 0 ? -100 : static_cast<int64_t>((i * 613) % static_cast<size_t>(V));
    const Tensor targets = tensor_from(t, {N});
    for (int64_t tp : {2, 3}) {
      for (DType dt : kGpuDtypes) {
        const std::string what = "V " + std::to_string(V) + " tp " + std::to_string(tp) + " " + std::string(to_string(dt));
        const Tensor x = rounded(whole, dt);
        const CrossEntropyReference ref = reference_cross_entropy(x, targets, 0);
        const CrossEntropyRun run =
            run_parallel_cross_entropy(x, targets, tp, kGpu, dt, 0, Seeds::first_rank, /*through_op=*/true);
        const int64_t C = (V + tp - 1) / tp;
        for (int64_t r = 0; r < tp; ++r) {
          const std::string rank = what + " rank " + std::to_string(r);
          check_close(tensor_from(std::vector<double>{run.loss[static_cast<size_t>(r)]}, {1}),
                      tensor_from(std::vector<double>{ref.loss}, {1}), tolerance(DType::f32), "loss " + rank);
          check_close(tensor_from(run.grad[static_cast<size_t>(r)], {N, C}),
                      tensor_from(reference_shard_grad(ref.grad, N, V, r, C, 1.0), {N, C}), tolerance(dt),
                      "grad " + rank);
        }
      }
    }
  }
}
