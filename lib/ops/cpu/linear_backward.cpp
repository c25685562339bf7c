// The linear layer's weight and bias gradients with the bias column sums riding on the weight
// GEMM's read of the gradient (see linear_backward.h): the sums of a piece of rows bring it
// into cache, the GEMM then packs it from there.
#include "lib/ops/cpu/linear_backward.h"

#include <algorithm>
#include <vector>

#include "lib/ops/cpu/matmul.h"
#include "lib/ops/cpu/reduce.h"

namespace hetu::ops::cpu {

template <typename T>
void linear_weight_bias_grads(T* dweight, T* dbias, const T* g, const T* x, int64_t rows, int64_t n, int64_t k) {
  std::vector<double> sums(static_cast<size_t>(n), 0.0);
  if (rows == 0) std::fill_n(dweight, n * k, T(0));
  for (int64_t r0 = 0; r0 < rows; r0 += kBiasRowChunk) {
    const int64_t m = std::min(kBiasRowChunk, rows - r0);
    add_column_sums(g + r0 * n, m, n, n, sums.data());
    gemm<T>(true, false, n, k, m, T(1), g + r0 * n, n, x + r0 * k, k, r0 == 0 ? T(0) : T(1), dweight, k);
  }
  for (int64_t c = 0; c < n; ++c) dbias[c] = static_cast<T>(sums[static_cast<size_t>(c)]);
}

template void linear_weight_bias_grads<float>(float*, float*, const float*, const float*, int64_t, int64_t, int64_t);
template void linear_weight_bias_grads<double>(double*, double*, const double*, const double*, int64_t, int64_t,
                                               int64_t);

}  // namespace hetu::ops::cpu
