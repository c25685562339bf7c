// Counter-based RNG for parameter init: Philox4x32-10 (Salmon et al., SC'11) keyed by
// (seed, stream), indexed by element. Element i of stream s is a pure function of
// (seed, s, i), so any shard of a tensor can be generated alone and equals the same elements
// of the whole tensor, however the tensor is sharded. No state advances; no globals.
//
// Contract (changing it changes every initialised model):
//   key     = (seed & 0xffffffff, seed >> 32)
//   counter = (i & 0xffffffff, i >> 32, sid & 0xffffffff, sid >> 32), sid = stream_id(stream)
//   out     = philox4x32_10(counter, key)            -- one call per element
//   uniform(i) = (out[0] >> 8) * 2^-24               -- float in [0,1), exactly representable
//   normal(i)  = sqrt(-2 ln u1) * cos(2 pi u2), in double, with
//                u1 = (out[0] + 1.0) * 2^-32 in (0,1],  u2 = out[1] * 2^-32 in [0,1)
//   fills: low + (high - low) * uniform, mean + std * normal, computed in double, then cast.
//
// Example: a (4,6) weight split column-wise over tp=2; rank 1 holds columns 3..5:
//   CounterRng rng(seed, "transformer.h.0.attn.c_attn.weight");
//   int64_t shape[] = {4, 6}, off[] = {0, 3}, size[] = {4, 3};
//   rng.fill_normal_box(local, shape, off, size, 0.0f, 0.02f);  // local is 4x3 row-major
//   // local[r*3 + c] == float(0.02 * rng.normal(r*6 + 3 + c)), as in the unsharded tensor.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

namespace hetu {

// Philox4x32 with 10 rounds: a bijection of the counter for each key.
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

// FNV-1a 64-bit of the bytes of name: stable across platforms, compilers and runs.
uint64_t stream_id(std::string_view name);

class CounterRng {
 public:
  CounterRng(uint64_t seed, std::string_view stream);

  std::array<uint32_t, 4> bits(int64_t index) const;  // the raw Philox output of element index
  float uniform(int64_t index) const;                 // [0, 1)
  double normal(int64_t index) const;                 // standard normal

  // out[k] = element first_index + k, for k in [0, count).
  void fill_uniform(float* out, int64_t first_index, int64_t count, float low, float high) const;
  void fill_uniform(double* out, int64_t first_index, int64_t count, double low, double high) const;
  void fill_normal(float* out, int64_t first_index, int64_t count, float mean, float std) const;
  void fill_normal(double* out, int64_t first_index, int64_t count, double mean, double std) const;

  // Box fills: out is the box, row-major over box_size; the element at box coordinate c uses
  // index = row-major linear index of (box_offset + c) in global_shape. Ranks must be equal
  // and the box inside the shape.
  void fill_uniform_box(float* out, std::span<const int64_t> global_shape,
                        std::span<const int64_t> box_offset, std::span<const int64_t> box_size,
                        float low, float high) const;
  void fill_normal_box(float* out, std::span<const int64_t> global_shape,
                       std::span<const int64_t> box_offset, std::span<const int64_t> box_size,
                       float mean, float std) const;

 private:
  std::array<uint32_t, 2> key_;
  uint64_t stream_;
};

}  // namespace hetu
