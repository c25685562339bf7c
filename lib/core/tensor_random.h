// Random tensors from the counter-based RNG (rng.h), keyed by (seed, key, element index).
// A tensor may be a shard: the box at `offset` of a tensor of `global_shape`; it then gets
// exactly the values the same elements have in the unsharded tensor.
//
//   Tensor w = random_normal({768, 2304}, 1234, "h.0.attn.c_attn.weight", 0.0, 0.02);
//   Tensor shard = random_normal({768, 1152}, 1234, "h.0.attn.c_attn.weight", 0.0, 0.02,
//                                {768, 2304}, {0, 1152});   // == w.narrow(1, 1152, 1152)
#pragma once

#include <cstdint>
#include <string_view>

#include "lib/core/tensor.h"

namespace hetu {

enum class Distribution { normal, uniform };

// Fills a contiguous f32/f64 CPU tensor. normal: mean a, std b; uniform: [a, b).
// Empty global_shape/offset: the tensor is the whole logical tensor.
void fill_random(const Tensor& t, Distribution dist, uint64_t seed, std::string_view key, double a, double b,
                 const Shape& global_shape = {}, const Shape& offset = {});

Tensor random_normal(const Shape& shape, uint64_t seed, std::string_view key, double mean, double std,
                     const Shape& global_shape = {}, const Shape& offset = {}, DType dtype = DType::f32);
Tensor random_uniform(const Shape& shape, uint64_t seed, std::string_view key, double low, double high,
                      const Shape& global_shape = {}, const Shape& offset = {}, DType dtype = DType::f32);

}  // namespace hetu
