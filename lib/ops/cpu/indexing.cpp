// CPU kernels for gather_rows / scatter_add_rows (embedding and index_select, forward and
// backward). Shapes as in cpu/indexing.h: src/out (outer, rows, inner), gathered (outer, K, inner).
// The scatter groups the K positions by target row first (a counting sort), so threads own
// disjoint output rows: no atomics, no races, and a fixed summation order.
#include "lib/ops/cpu/indexing.h"

#include <algorithm>
#include <vector>

namespace hetu::ops::cpu {
namespace {
constexpr int64_t kParallelGrain = 1 << 14;  // elements; below this one thread is faster
}  // namespace

template <typename index_t> int64_t first_out_of_range(const index_t* index, int64_t n, int64_t limit) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t id = static_cast<int64_t>(index[i]);
    if (id < 0 || id >= limit) return i;
  }
  return -1;
}

template <typename scalar_t, typename index_t>
void gather_rows(scalar_t* out, const scalar_t* src, const index_t* index, int64_t outer, int64_t rows, int64_t k,
                 int64_t inner) {
  const int64_t total = outer * k;
#pragma omp parallel for if (total * inner > kParallelGrain)
  for (int64_t row = 0; row < total; ++row) {
    const int64_t o = row / k;
    const int64_t r = static_cast<int64_t>(index[row % k]);
    std::copy_n(src + (o * rows + r) * inner, inner, out + row * inner);
  }
}

template <typename scalar_t, typename index_t>
void scatter_add_rows(scalar_t* out, const scalar_t* grad, const index_t* index, int64_t outer, int64_t rows,
                      int64_t k, int64_t inner) {
  // Counting sort of positions by target row: positions of row r are order[start[r] .. start[r+1]),
  // ascending.
  std::vector<int64_t> start(static_cast<size_t>(rows) + 1, 0);
  for (int64_t j = 0; j < k; ++j) ++start[static_cast<size_t>(index[j]) + 1];
  for (int64_t r = 0; r < rows; ++r) start[static_cast<size_t>(r) + 1] += start[static_cast<size_t>(r)];
  std::vector<int64_t> order(static_cast<size_t>(k));
  std::vector<int64_t> fill(start.begin(), start.end() - 1);
  for (int64_t j = 0; j < k; ++j) order[static_cast<size_t>(fill[static_cast<size_t>(index[j])]++)] = j;

  const int64_t total = outer * rows;
#pragma omp parallel for schedule(dynamic, 16) if ((total + k) * inner > kParallelGrain)
  for (int64_t row = 0; row < total; ++row) {
    const int64_t o = row / rows;
    const size_t r = static_cast<size_t>(row % rows);
    scalar_t* dst = out + row * inner;
    std::fill_n(dst, inner, scalar_t(0));
    for (int64_t p = start[r]; p < start[r + 1]; ++p) {
      const scalar_t* g = grad + (o * k + order[static_cast<size_t>(p)]) * inner;
      for (int64_t c = 0; c < inner; ++c) dst[c] += g[c];
    }
  }
}

template <typename scalar_t, typename index_t>
void scatter_add_rows_into(scalar_t* out, const scalar_t* grad, const index_t* index, int64_t k, int64_t inner) {
  // Positions sorted by (row, position): each run of one row is a group, summed in ascending k.
  std::vector<int64_t> order(static_cast<size_t>(k));
  for (int64_t j = 0; j < k; ++j) order[static_cast<size_t>(j)] = j;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return index[a] < index[b]; });
  std::vector<int64_t> group_start;
  for (int64_t p = 0; p < k; ++p) {
    const bool new_row = p == 0 || index[order[static_cast<size_t>(p)]] != index[order[static_cast<size_t>(p - 1)]];
    if (new_row) group_start.push_back(p);
  }
  const int64_t groups = static_cast<int64_t>(group_start.size());
  group_start.push_back(k);
#pragma omp parallel if (k * inner > kParallelGrain)
  {
    std::vector<scalar_t> acc(static_cast<size_t>(inner));
#pragma omp for schedule(dynamic, 16)
    for (int64_t gi = 0; gi < groups; ++gi) {
      const int64_t p0 = group_start[static_cast<size_t>(gi)], p1 = group_start[static_cast<size_t>(gi) + 1];
      std::fill(acc.begin(), acc.end(), scalar_t(0));
      for (int64_t p = p0; p < p1; ++p) {
        const scalar_t* g = grad + order[static_cast<size_t>(p)] * inner;
        for (int64_t c = 0; c < inner; ++c) acc[static_cast<size_t>(c)] += g[c];
      }
      scalar_t* dst = out + static_cast<int64_t>(index[order[static_cast<size_t>(p0)]]) * inner;
      for (int64_t c = 0; c < inner; ++c) dst[c] += acc[static_cast<size_t>(c)];
    }
  }
}

#define HT_INSTANTIATE(S, I)                                                                                      \
  template void gather_rows<S, I>(S*, const S*, const I*, int64_t, int64_t, int64_t, int64_t);                    \
  template void scatter_add_rows<S, I>(S*, const S*, const I*, int64_t, int64_t, int64_t, int64_t);               \
  template void scatter_add_rows_into<S, I>(S*, const S*, const I*, int64_t, int64_t);
HT_INSTANTIATE(float, int32_t)
HT_INSTANTIATE(float, int64_t)
HT_INSTANTIATE(double, int32_t)
HT_INSTANTIATE(double, int64_t)
#undef HT_INSTANTIATE
template int64_t first_out_of_range<int32_t>(const int32_t*, int64_t, int64_t);
template int64_t first_out_of_range<int64_t>(const int64_t*, int64_t, int64_t);

}  // namespace hetu::ops::cpu
