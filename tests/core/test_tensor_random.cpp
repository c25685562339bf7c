// Sharded random tensors equal the same slice of the unsharded tensor, for every way of
// cutting a 3-d tensor, in f32 and f64; values follow CounterRng element by element.
#include <catch2/catch.hpp>

#include "lib/core/rng.h"
#include "lib/core/tensor_random.h"

using namespace hetu;

TEST_CASE("a shard generated alone equals the slice of the whole tensor", "[tensor_random]") {
  const Shape global = {5, 7, 33};
  for (DType dtype : {DType::f32, DType::f64}) {
    const Tensor whole = random_normal(global, 42, "layer.weight", 0.0, 0.02, {}, {}, dtype);
    for (int64_t d = 0; d < 3; ++d) {
      const int64_t n = global[static_cast<size_t>(d)];
      for (auto [start, length] : {std::pair<int64_t, int64_t>{0, 1}, {1, n - 2}, {n - 1, 1}, {0, n}}) {
        Shape shard_shape = global, offset = {0, 0, 0};
        shard_shape[static_cast<size_t>(d)] = length;
        offset[static_cast<size_t>(d)] = start;
        INFO("dim " << d << " start " << start << " length " << length << " " << to_string(dtype));
        const Tensor shard = random_normal(shard_shape, 42, "layer.weight", 0.0, 0.02, global, offset, dtype);
        CHECK(to_vector(shard) == to_vector(whole.narrow(d, start, length)));
      }
    }
  }
}

TEST_CASE("values follow the RNG's element indices, keys and seeds separate streams", "[tensor_random]") {
  const Tensor u = random_uniform({3, 4}, 7, "wte", -1.0, 1.0, {}, {}, DType::f64);
  const CounterRng rng(7, "wte");
  const std::vector<double> v = to_vector(u);
  for (int64_t i = 0; i < 12; ++i) {
    CHECK(v[static_cast<size_t>(i)] == Approx(-1.0 + 2.0 * rng.uniform(i)).epsilon(1e-12));
  }
  CHECK(to_vector(random_normal({8}, 1, "a", 0, 1)) != to_vector(random_normal({8}, 1, "b", 0, 1)));
  CHECK(to_vector(random_normal({8}, 1, "a", 0, 1)) != to_vector(random_normal({8}, 2, "a", 0, 1)));
  CHECK_THROWS_WITH(random_normal({2, 3}, 1, "a", 0, 1, {2, 4}, {0, 2}), Catch::Contains("is outside"));
  CHECK_THROWS_WITH(random_normal({2}, 1, "a", 0, 1, {}, {}, DType::i32), Catch::Contains("op fill_random not implemented"));
}
