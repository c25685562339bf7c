// Random fills of whole tensors and shards: each row of the box is one contiguous run of
// global element indices, filled by CounterRng directly.
#include "lib/core/tensor_random.h"

#include "lib/core/dispatch.h"
#include "lib/core/rng.h"

namespace hetu {
namespace {

// Each row of the shard is one run of consecutive global indices.
template <typename T>
void fill_rows(T* out, const Shape& shape, const Shape& global, const Shape& start, const CounterRng& rng,
               Distribution dist, double a, double b) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  const int64_t row = nd == 0 ? 1 : shape.back();
  const int64_t rows = row == 0 ? 0 : shape_numel(shape) / row;
  const Shape global_strides = contiguous_strides(global);
#pragma omp parallel for schedule(static) if (rows * row > 65536)
  for (int64_t r = 0; r < rows; ++r) {
    int64_t first = nd == 0 ? 0 : start.back();
    int64_t rest = r;
    for (int64_t d = nd - 2; d >= 0; --d) {
      const size_t du = static_cast<size_t>(d);
      first += (start[du] + rest % shape[du]) * global_strides[du];
      rest /= shape[du];
    }
    if (dist == Distribution::normal) {
      rng.fill_normal(out + r * row, first, row, static_cast<T>(a), static_cast<T>(b));
    } else {
      rng.fill_uniform(out + r * row, first, row, static_cast<T>(a), static_cast<T>(b));
    }
  }
}

}  // namespace

void fill_random(const Tensor& t, Distribution dist, uint64_t seed, std::string_view key, double a, double b,
                 const Shape& global_shape, const Shape& offset) {
  HT_CHECK(t.device().is_cpu() && t.is_contiguous(), "fill_random: needs a contiguous CPU tensor");
  const Shape global = global_shape.empty() ? t.shape() : global_shape;
  const Shape start = offset.empty() ? Shape(t.shape().size(), 0) : offset;
  HT_CHECK(global.size() == t.shape().size() && start.size() == t.shape().size(),
           "fill_random: shard {} needs a global shape and offset of the same rank (got {} and {})",
           shape_str(t.shape()), shape_str(global), shape_str(start));
  for (size_t d = 0; d < global.size(); ++d) {
    HT_CHECK(start[d] >= 0 && start[d] + t.shape()[d] <= global[d], "fill_random: shard {} at {} is outside {}",
             shape_str(t.shape()), shape_str(start), shape_str(global));
  }
  const CounterRng rng(seed, key);
  HT_DISPATCH_FLOAT(t.dtype(), "fill_random", t.device(),
                    [&] { fill_rows(t.data<scalar_t>(), t.shape(), global, start, rng, dist, a, b); });
}

Tensor random_normal(const Shape& shape, uint64_t seed, std::string_view key, double mean, double std,
                     const Shape& global_shape, const Shape& offset, DType dtype) {
  Tensor t = empty(shape, dtype);
  fill_random(t, Distribution::normal, seed, key, mean, std, global_shape, offset);
  return t;
}

Tensor random_uniform(const Shape& shape, uint64_t seed, std::string_view key, double low, double high,
                      const Shape& global_shape, const Shape& offset, DType dtype) {
  Tensor t = empty(shape, dtype);
  fill_random(t, Distribution::uniform, seed, key, low, high, global_shape, offset);
  return t;
}

}  // namespace hetu
