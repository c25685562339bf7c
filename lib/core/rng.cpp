// Philox4x32-10, FNV-1a stream ids and CounterRng fills. See lib/core/rng.h for the contract.
// Fills are pure per element; a box fill walks the box row by row (last dim contiguous in
// both the box and the global shape). OpenMP is not linked to hetu_core, so fills run serially.
#include "lib/core/rng.h"

#include <cmath>
#include <numbers>

#include "lib/util/error.h"

namespace hetu {

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> x, std::array<uint32_t, 2> k) {
  constexpr uint64_t kM0 = 0xD2511F53, kM1 = 0xCD9E8D57;
  constexpr uint32_t kW0 = 0x9E3779B9, kW1 = 0xBB67AE85;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] += kW0;
      k[1] += kW1;
    }
    const uint64_t p0 = kM0 * x[0];
    const uint64_t p1 = kM1 * x[2];
    x = {static_cast<uint32_t>(p1 >> 32) ^ x[1] ^ k[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ x[3] ^ k[1], static_cast<uint32_t>(p0)};
  }
  return x;
}

uint64_t stream_id(std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : name) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

CounterRng::CounterRng(uint64_t seed, std::string_view stream)
    : key_{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)},
      stream_(stream_id(stream)) {}

std::array<uint32_t, 4> CounterRng::bits(int64_t index) const {
  const auto i = static_cast<uint64_t>(index);
  return philox4x32_10({static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32),
                        static_cast<uint32_t>(stream_), static_cast<uint32_t>(stream_ >> 32)},
                       key_);
}

float CounterRng::uniform(int64_t index) const {
  return static_cast<float>(bits(index)[0] >> 8) * 0x1p-24f;
}

double CounterRng::normal(int64_t index) const {
  const auto out = bits(index);
  const double u1 = (out[0] + 1.0) * 0x1p-32;
  const double u2 = out[1] * 0x1p-32;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

namespace {

void check_range(const char* what, int64_t first_index, int64_t count) {
  HT_CHECK(first_index >= 0 && count >= 0 && count <= INT64_MAX - first_index,
           "{}: bad range first_index={} count={}", what, first_index, count);
}

template <typename T>
void fill_uniform_impl(const CounterRng& rng, T* out, int64_t first, int64_t count, double low,
                       double high) {
  for (int64_t k = 0; k < count; ++k)
    out[k] = static_cast<T>(low + (high - low) * rng.uniform(first + k));
}

template <typename T>
void fill_normal_impl(const CounterRng& rng, T* out, int64_t first, int64_t count, double mean,
                      double std) {
  for (int64_t k = 0; k < count; ++k) out[k] = static_cast<T>(mean + std * rng.normal(first + k));
}

// Calls fill_row(out_row, global_first_index, row_length) once per row of the box.
template <typename FillRow>
void for_each_box_row(const char* what, std::span<const int64_t> shape,
                      std::span<const int64_t> offset, std::span<const int64_t> size,
                      FillRow&& fill_row) {
  const auto rank = static_cast<int64_t>(shape.size());
  HT_CHECK(static_cast<int64_t>(offset.size()) == rank && static_cast<int64_t>(size.size()) == rank,
           "{}: ranks differ: shape {}, box_offset {}, box_size {}", what, rank, offset.size(),
           size.size());
  int64_t numel = 1;
  for (int64_t d = 0; d < rank; ++d) {
    HT_CHECK(shape[d] >= 0, "{}: global_shape[{}] = {} is negative", what, d, shape[d]);
    HT_CHECK(offset[d] >= 0 && size[d] >= 0 && offset[d] <= shape[d] - size[d],
             "{}: box dim {} (offset {}, size {}) is outside the shape ({})", what, d, offset[d],
             size[d], shape[d]);
    HT_CHECK(shape[d] == 0 || numel <= INT64_MAX / shape[d], "{}: global shape overflows int64",
             what);
    numel *= shape[d];
  }
  const int64_t row_len = rank == 0 ? 1 : size[rank - 1];
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < rank; ++d) rows *= size[d];
  if (rows == 0 || row_len == 0) return;
#pragma omp parallel for schedule(static) if (rows * row_len > 65536)
  for (int64_t r = 0; r < rows; ++r) {
    // Global linear index of the row start: decompose r over box_size[0..rank-2].
    int64_t index = rank == 0 ? 0 : offset[rank - 1];
    int64_t stride = rank == 0 ? 1 : shape[rank - 1];
    int64_t rest = r;
    for (int64_t d = rank - 2; d >= 0; --d) {
      index += (offset[d] + rest % size[d]) * stride;
      rest /= size[d];
      stride *= shape[d];
    }
    fill_row(r * row_len, index, row_len);
  }
}

}  // namespace

void CounterRng::fill_uniform(float* out, int64_t first, int64_t count, float low,
                              float high) const {
  check_range("fill_uniform", first, count);
  fill_uniform_impl(*this, out, first, count, low, high);
}

void CounterRng::fill_uniform(double* out, int64_t first, int64_t count, double low,
                              double high) const {
  check_range("fill_uniform", first, count);
  fill_uniform_impl(*this, out, first, count, low, high);
}

void CounterRng::fill_normal(float* out, int64_t first, int64_t count, float mean,
                             float std) const {
  check_range("fill_normal", first, count);
  fill_normal_impl(*this, out, first, count, mean, std);
}

void CounterRng::fill_normal(double* out, int64_t first, int64_t count, double mean,
                             double std) const {
  check_range("fill_normal", first, count);
  fill_normal_impl(*this, out, first, count, mean, std);
}

void CounterRng::fill_uniform_box(float* out, std::span<const int64_t> shape,
                                  std::span<const int64_t> offset, std::span<const int64_t> size,
                                  float low, float high) const {
  for_each_box_row("fill_uniform_box", shape, offset, size, [&](int64_t at, int64_t i, int64_t n) {
    fill_uniform_impl(*this, out + at, i, n, low, high);
  });
}

void CounterRng::fill_normal_box(float* out, std::span<const int64_t> shape,
                                 std::span<const int64_t> offset, std::span<const int64_t> size,
                                 float mean, float std) const {
  for_each_box_row("fill_normal_box", shape, offset, size, [&](int64_t at, int64_t i, int64_t n) {
    fill_normal_impl(*this, out + at, i, n, mean, std);
  });
}

}  // namespace hetu
