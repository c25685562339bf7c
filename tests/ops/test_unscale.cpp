// unscale_and_check_ (fp16's unscale, lib/optim/loss_scaler.h) against a naive loop: every
// element multiplied by inv_scale in its own dtype, and the flag true exactly when some
// result is inf or nan, wherever it sits (first, last, past a parallel block, in a later
// tensor), for f32 and f64 and sizes around the kernel's blocks.
#include <cmath>
#include <limits>

#include "lib/ops/ops.h"
#include "tests/ops/op_test_utils.h"

using namespace hetu;
using namespace hetu::test;

namespace {

// The naive unscale of one tensor: x * inv in the tensor's dtype, and whether any is not finite.
template <typename T> std::vector<double> naive_unscale(const Tensor& t, double inv, bool* bad) {
  std::vector<double> out;
  for (double v : to_vector(t)) {
    const T r = static_cast<T>(v) * static_cast<T>(inv);
    *bad = *bad || !std::isfinite(r);
    out.push_back(static_cast<double>(r));
  }
  return out;
}

bool same_values(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) ? !std::isnan(b[i]) : a[i] != b[i]) return false;
  }
  return true;
}

template <typename T> void check_against_naive(DType dtype, std::vector<int64_t> sizes, std::vector<std::pair<size_t, int64_t>> poison,
                                               double poison_value, double inv) {
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < sizes.size(); ++i) tensors.push_back(random_tensor({sizes[i]}, dtype, 100 + i, -1e3, 1e3));
  for (auto [which, at] : poison) tensors[which].view({-1}).narrow(0, at, 1).copy_from(full({1}, poison_value, dtype));
  bool expected = false;
  std::vector<std::vector<double>> want;
  for (const Tensor& t : tensors) want.push_back(naive_unscale<T>(t, inv, &expected));
  const bool got = ops::unscale_and_check_(tensors, inv);
  CHECK(got == expected);
  for (size_t i = 0; i < tensors.size(); ++i) CHECK(same_values(to_vector(tensors[i]), want[i]));
}

}  // namespace

TEST_CASE("unscale_and_check_ scales in place and flags inf/nan like a naive loop", "[optimizer]") {
  const double inv_pow2 = std::ldexp(1.0, -16), inv_odd = 1.0 / 3.0;
  const std::vector<int64_t> sizes = {1, 31, 16384, 16385, 40003};  // the kernel's blocks are 16384 elements
  for (double inv : {inv_pow2, inv_odd}) {
    check_against_naive<float>(DType::f32, sizes, {}, 0, inv);
    check_against_naive<double>(DType::f64, sizes, {}, 0, inv);
    for (double bad : {double(INFINITY), -double(INFINITY), double(NAN)}) {
      for (std::pair<size_t, int64_t> at : std::vector<std::pair<size_t, int64_t>>{{0, 0}, {1, 30}, {3, 16384}, {4, 40002}, {4, 20000}}) {
        CAPTURE(inv, bad, at.first, at.second);
        check_against_naive<float>(DType::f32, sizes, {at}, bad, inv);
        check_against_naive<double>(DType::f64, sizes, {at}, bad, inv);
      }
    }
  }
  // The largest finite values stay finite when scaled down: no false alarm.
  std::vector<Tensor> big = {full({5}, std::numeric_limits<float>::max(), DType::f32)};
  CHECK_FALSE(ops::unscale_and_check_(big, inv_pow2));
  CHECK(to_vector(big[0])[0] == static_cast<double>(std::numeric_limits<float>::max() * static_cast<float>(inv_pow2)));
}

TEST_CASE("unscale_and_check_ argument errors", "[optimizer]") {
  std::vector<Tensor> t = {zeros({4})};
  CHECK_THROWS_WITH(ops::unscale_and_check_(t, 0.0), Catch::Contains("inv_scale must be finite and > 0"));
  std::vector<Tensor> strided = {zeros({4, 4}).transpose(0, 1)};
  CHECK_THROWS_WITH(ops::unscale_and_check_(strided, 0.5), Catch::Contains("must be contiguous"));
  std::vector<Tensor> ints = {zeros({4}, DType::i32)};
  CHECK_THROWS_WITH(ops::unscale_and_check_(ints, 0.5), Catch::Contains("not implemented"));
}
