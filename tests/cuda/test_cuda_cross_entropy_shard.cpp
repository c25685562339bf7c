// The vocabulary-shard cross-entropy kernels (cross_entropy_shard_stats / _backward) on the
// GPU against the CPU kernels, f32 and bf16 logits, i32 and i64 targets: shards whose rows
// are whole 16-byte packs and shards that are not (the scalar path), a last shard with
// padding columns, targets inside and outside the shard, ignored rows. Statistics are f32
// on the GPU for both dtypes. See Note [CUDA parity tolerances].
#include "lib/ops/ops.h"
#include "tests/cuda/cuda_test_utils.h"

using namespace hetu;
using namespace hetu::test;

TEST_CASE("cuda ops: cross-entropy shard statistics and backward", "[cuda]") {
  HT_REQUIRE_GPU();
  const int64_t N = 37, V = 1000;
  std::vector<double> t(static_cast<size_t>(N));
  for (size_t i = 0; i < t.size(); ++i) t[i] = i % 6 == 0 ? -100.0 : static_cast<double>((i * 389) % V);
  // (C, offset): whole rows of packs (512); odd width (333) at offset 333; the last shard
  // of three with 512 columns: 0..487 real, then padding.
  for (auto [C, offset] : {std::pair<int64_t, int64_t>{512, 0}, {333, 333}, {512, 512}}) {
    const Tensor logits = random_cpu({N, C}, 200 + static_cast<uint64_t>(offset + C), -6, 6);
    for (DType idt : {DType::i32, DType::i64}) {
      const Tensor targets = tensor_from(t, {N}).to(idt);
      for (DType dt : kGpuDtypes) {
        const std::string what = " C " + std::to_string(C) + " offset " + std::to_string(offset) + " " +
                                 std::string(to_string(dt)) + " targets " + std::string(to_string(idt));
        int64_t gcount = -1, rcount = -2;
        const ops::CrossEntropyShardStats g =
            ops::cross_entropy_shard_stats(gpu(logits, dt), targets.to(kGpu), offset, V, -100, &gcount);
        const ops::CrossEntropyShardStats r =
            ops::cross_entropy_shard_stats(rounded(logits, dt), targets, offset, V, -100, &rcount);
        CHECK(gcount == rcount);
        CHECK(g.max.dtype() == DType::f32);
        check_close(g.max, r.max, tolerance(DType::f32), "max" + what);
        check_close(g.sum_exp, r.sum_exp, tolerance(DType::f32), "sum_exp" + what);
        check_close(g.target_logit, r.target_logit, tolerance(DType::f32), "target_logit" + what);
        CHECK(to_vector(g.kept) == to_vector(r.kept));
        // Backward with "global" statistics from another shard's view: this shard's max + 1
        // and sum_exp x 3, and per-row gradients.
        const Tensor max = ops::add_scalar(r.max, 1.0), sum_exp = ops::mul_scalar(r.sum_exp, 3.0);
        const Tensor grad = random_cpu({N}, 300, 0.1, 1.0);
        check_close(ops::cross_entropy_shard_backward(grad.to(kGpu), gpu(logits, dt), targets.to(kGpu), max.to(kGpu),
                                                      sum_exp.to(kGpu), offset, V),
                    ops::cross_entropy_shard_backward(grad, rounded(logits, dt), targets, max, sum_exp, offset, V),
                    tolerance(dt), "cross_entropy_shard_backward" + what);
      }
    }
  }
  CHECK_THROWS_WITH(ops::cross_entropy_shard_stats(zeros({2, 3}, DType::f32, kGpu), full({2}, 8, DType::i64, kGpu), 3, 8),
                    Catch::Contains("target 8 at row 0 is outside [0, 8)"));
  CHECK_THROWS_WITH(ops::cross_entropy_shard_backward(zeros({2}, DType::bf16, kGpu), zeros({2, 3}, DType::bf16, kGpu),
                                                      zeros({2}, DType::i64, kGpu), zeros({2}, DType::f32, kGpu),
                                                      zeros({2}, DType::f32, kGpu), 0, 8),
                    Catch::Contains("grad is bf16, expected f32 for bf16 logits on cuda:0"));
}
