// CPU kernels for AdamW (decoupled weight decay, as torch.optim.AdamW) and the sum of squares
// used by global-norm clipping. Buffers are flat and contiguous; see cpu/optimizer.h.
// The update is elementwise, run with the CPU's widest vectors (Note [Kernel ISA levels]);
// sum_squares reduces fixed 4096-element blocks in parallel (each with the widest vectors too)
// and adds the partials serially, so the norm does not depend on the thread count.
#include "lib/ops/cpu/optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "lib/ops/cpu/isa.h"

namespace hetu::ops::cpu {
namespace {
constexpr int64_t kParallelGrain = 1 << 14;
constexpr int64_t kBlock = 4096;

// The update of n consecutive elements (see cpu/optimizer.h for the formula).
struct AdamWRange {
  template <typename scalar_t>
  static void run(scalar_t* param, const scalar_t* grad, scalar_t* m, scalar_t* v, int64_t n, const AdamWScalars* s) {
    const scalar_t beta1 = static_cast<scalar_t>(s->beta1), beta2 = static_cast<scalar_t>(s->beta2);
    const scalar_t one_minus_beta1 = static_cast<scalar_t>(1 - s->beta1);
    const scalar_t one_minus_beta2 = static_cast<scalar_t>(1 - s->beta2);
    const scalar_t inv_bc1 = static_cast<scalar_t>(1 / s->bc1), inv_bc2 = static_cast<scalar_t>(1 / s->bc2);
    const scalar_t lr = static_cast<scalar_t>(s->lr), eps = static_cast<scalar_t>(s->eps);
    const scalar_t wd = static_cast<scalar_t>(s->weight_decay), grad_scale = static_cast<scalar_t>(s->grad_scale);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      const scalar_t g = grad[i] * grad_scale;
      const scalar_t mi = beta1 * m[i] + one_minus_beta1 * g;
      const scalar_t vi = beta2 * v[i] + one_minus_beta2 * g * g;
      m[i] = mi;
      v[i] = vi;
      const scalar_t m_hat = mi * inv_bc1;
      const scalar_t v_hat = vi * inv_bc2;
      param[i] -= lr * (m_hat / (std::sqrt(v_hat) + eps) + wd * param[i]);
    }
  }
};

// *out = Σ x², in double: kLanes independent sums (lane l takes elements ≡ l mod kLanes),
// added in a fixed order. One running sum is a chain of dependent adds; the lanes vectorise
// (run_isa: the grad norm reads every gradient, most of them in the LM head's at V = 50,257).
struct SumSquaresBlock {
  template <typename scalar_t> static void run(const scalar_t* x, int64_t n, double* out) {
    constexpr int64_t kLanes = 32;  // four AVX-512 accumulators: the adds of one do not wait on each other
    double lanes[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
#pragma omp simd
      for (int64_t l = 0; l < kLanes; ++l) lanes[l] += static_cast<double>(x[i + l]) * static_cast<double>(x[i + l]);
    }
    for (int64_t l = 0; i < n; ++i, ++l) lanes[l] += static_cast<double>(x[i]) * static_cast<double>(x[i]);
    double acc = 0;
    for (double lane : lanes) acc += lane;
    *out = acc;
  }
};

// x *= inv over n elements; *bad = 1 when a result is inf or nan. The test reads the exponent
// bits (all ones: inf or nan) so that it vectorises with the multiply and holds under any
// floating-point flags.
struct UnscaleRange {
  template <typename scalar_t> static void run(scalar_t* x, int64_t n, double inv_scale, int* bad) {
    using Bits = std::conditional_t<sizeof(scalar_t) == 4, uint32_t, uint64_t>;
    constexpr Bits kExponent = static_cast<Bits>(sizeof(scalar_t) == 4 ? 0x7f800000ull : 0x7ff0000000000000ull);
    const scalar_t inv = static_cast<scalar_t>(inv_scale);
    int found = 0;
#pragma omp simd reduction(|:found)
    for (int64_t i = 0; i < n; ++i) {
      const scalar_t v = x[i] * inv;
      x[i] = v;
      Bits bits;
      std::memcpy(&bits, &v, sizeof(bits));
      found |= (bits & kExponent) == kExponent ? 1 : 0;
    }
    *bad = found;
  }
};

}  // namespace

template <typename scalar_t> bool unscale_and_check(scalar_t* x, int64_t n, double inv_scale) {
  const int64_t blocks = (n + kParallelGrain - 1) / kParallelGrain;
  int found = 0;
#pragma omp parallel for schedule(static) reduction(|:found) if (blocks > 1)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t i = b * kParallelGrain;
    int bad = 0;
    run_isa<UnscaleRange>(x + i, std::min(kParallelGrain, n - i), inv_scale, &bad);
    found |= bad;
  }
  return found != 0;
}

template <typename scalar_t>
void adamw_update(scalar_t* param, const scalar_t* grad, scalar_t* m, scalar_t* v, int64_t n, const AdamWScalars& s) {
  // Blocks of kParallelGrain elements, each updated with the CPU's widest vectors (run_isa).
  const int64_t blocks = (n + kParallelGrain - 1) / kParallelGrain;
#pragma omp parallel for schedule(static) if (blocks > 1)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t i = b * kParallelGrain, len = std::min(kParallelGrain, n - i);
    run_isa<AdamWRange>(param + i, grad + i, m + i, v + i, len, &s);
  }
}

template <typename scalar_t> double sum_squares(const scalar_t* x, int64_t n) {
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> partial(static_cast<size_t>(blocks), 0.0);
#pragma omp parallel for if (n > kParallelGrain)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t i = b * kBlock;
    run_isa<SumSquaresBlock>(x + i, std::min(n, i + kBlock) - i, &partial[static_cast<size_t>(b)]);
  }
  double total = 0;
  for (double p : partial) total += p;
  return total;
}

template void adamw_update<float>(float*, const float*, float*, float*, int64_t, const AdamWScalars&);
template void adamw_update<double>(double*, const double*, double*, double*, int64_t, const AdamWScalars&);
template double sum_squares<float>(const float*, int64_t);
template bool unscale_and_check<float>(float*, int64_t, double);
template bool unscale_and_check<double>(double*, int64_t, double);
template double sum_squares<double>(const double*, int64_t);

}  // namespace hetu::ops::cpu
