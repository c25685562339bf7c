// The CUDA device runtime: host <-> device copies (small, staged through pinned buffers,
// strided, casting), device fills, the caching allocator's reuse and statistics, and ops that
// reach only copies (concat, split, cast). Values are checked against the CPU tensors.
#include "tests/cuda/cuda_test_utils.h"

#include "lib/ops/ops.h"

using namespace hetu;
using namespace hetu::test;

TEST_CASE("cuda runtime: host to device to host round trips, small and staged", "[cuda]") {
  HT_REQUIRE_GPU();
  for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{3} << 20}) {  // 3M f32 = 12 MiB: two staging chunks
    INFO("n = " << n);
    const Tensor x = random_cpu({n}, 1);
    const Tensor back = x.to(kGpu).to(Device::cpu());
    CHECK(to_vector(back) == to_vector(x));
  }
}

TEST_CASE("cuda runtime: strided, broadcast and casting copies", "[cuda]") {
  HT_REQUIRE_GPU();
  const Tensor x = random_cpu({5, 7, 3}, 2);
  // A transposed host view to the GPU, then a permuted device view back.
  const Tensor t = x.transpose(0, 2);
  CHECK(to_vector(t.to(kGpu)) == to_vector(t));
  const Tensor g = x.to(kGpu);
  CHECK(to_vector(g.permute({1, 2, 0})) == to_vector(x.permute({1, 2, 0})));
  CHECK(to_vector(g.slice(1, 1, 7, 3).contiguous()) == to_vector(x.slice(1, 1, 7, 3)));
  // Casts on the device round like the CPU's.
  CHECK(to_vector(g.to(DType::bf16)) == to_vector(x.to(DType::bf16)));
  CHECK(to_vector(g.to(DType::bf16).to(DType::f32)) == to_vector(x.to(DType::bf16).to(DType::f32)));
  CHECK(to_vector(g.to(DType::f64)) == to_vector(x.to(DType::f64)));
  // Broadcast copy into a strided device view.
  Tensor dst = zeros({4, 6}, DType::f32, kGpu);
  const Tensor row = random_cpu({3}, 3);
  dst.slice(1, 0, 6, 2).copy_from(row.to(kGpu));
  Tensor expected = zeros({4, 6});
  expected.slice(1, 0, 6, 2).copy_from(row);
  CHECK(to_vector(dst) == to_vector(expected));
  // Float -> int casts check ranges on the host.
  CHECK(to_vector(full({3}, 2.75, DType::f32, kGpu).to(DType::i64)) == std::vector<double>{2, 2, 2});
  CHECK_THROWS_WITH(full({2}, 1e30, DType::f32, kGpu).to(DType::i32), Catch::Contains("does not fit"));
}

TEST_CASE("cuda runtime: fills, factories and item", "[cuda]") {
  HT_REQUIRE_GPU();
  CHECK(to_vector(zeros({3, 2}, DType::f32, kGpu)) == std::vector<double>(6, 0.0));
  CHECK(to_vector(full({2, 2}, -1.5, DType::bf16, kGpu)) == std::vector<double>(4, -1.5));
  CHECK(to_vector(arange(0, 5, 1, DType::i32, kGpu)) == std::vector<double>{0, 1, 2, 3, 4});
  Tensor x = zeros({4, 4}, DType::f32, kGpu);
  ops::fill_(x.transpose(0, 1).narrow(0, 1, 2), 7.0);  // columns 1 and 2
  const std::vector<double> v = to_vector(x);
  for (int64_t i = 0; i < 16; ++i) CHECK(v[static_cast<size_t>(i)] == ((i % 4 == 1 || i % 4 == 2) ? 7.0 : 0.0));
  CHECK(full({}, 3.25, DType::f32, kGpu).item() == 3.25);
}

TEST_CASE("cuda runtime: the caching allocator reuses blocks and counts peaks", "[cuda]") {
  HT_REQUIRE_GPU();
  cuda::synchronize(0);
  { Tensor warm = empty({1 << 20}, DType::f32, kGpu); }
  cuda::reset_peak_memory_stats(0);
  const cuda::MemoryStats before = cuda::memory_stats(0);
  for (int i = 0; i < 10; ++i) {
    Tensor a = empty({1 << 20}, DType::f32, kGpu);  // 4 MiB, freed every iteration
  }
  const cuda::MemoryStats after = cuda::memory_stats(0);
  CHECK(after.cuda_mallocs == before.cuda_mallocs);  // served from the cache
  CHECK(after.allocations == before.allocations + 10);
  CHECK(after.peak_allocated >= before.allocated + (size_t{4} << 20));
  CHECK(after.allocated == before.allocated);
  cuda::empty_cache(0);
  CHECK(cuda::memory_stats(0).reserved <= after.reserved);
}

TEST_CASE("cuda runtime: concat, split and cast of device tensors", "[cuda]") {
  HT_REQUIRE_GPU();
  const Tensor a = random_cpu({2, 3}, 4), b = random_cpu({2, 5}, 5);
  const Tensor c = ops::concat({a.to(kGpu), b.to(kGpu)}, 1);
  CHECK(to_vector(c) == to_vector(ops::concat({a, b}, 1)));
  const std::vector<Tensor> parts = ops::split(c, {3, 5}, 1);
  CHECK(to_vector(parts[1]) == to_vector(b));
  CHECK(to_vector(ops::cast(c, DType::bf16)) == to_vector(ops::cast(ops::concat({a, b}, 1), DType::bf16)));
  Tensor dst = zeros({2, 8}, DType::f32, kGpu);
  ops::copy_(dst, ops::concat({a, b}, 1));  // host source into a device tensor
  CHECK(to_vector(dst) == to_vector(c));
}

TEST_CASE("cuda runtime: ops reject mixed devices and unsupported dtypes clearly", "[cuda]") {
  HT_REQUIRE_GPU();
  const Tensor x = zeros({2, 2});
  CHECK_THROWS_WITH(ops::add(x, x.to(kGpu)), Catch::Contains("inputs on different devices (cpu and cuda:0)"));
  CHECK_THROWS_WITH(ops::gelu(x.to(DType::f64).to(kGpu)),
                    Catch::Contains("op gelu not implemented for device cuda:0 / dtype f64"));
}
