// Public cross_entropy_sum and cross_entropy_backward: argument checks, then the CPU kernel
// on contiguous copies. logits (N, V) with targets (N); more generally logits (..., V) with
// targets of logits' shape without the last dim, every leading position being one row.
//   int64_t count;
//   Tensor loss = cross_entropy_sum(logits, targets, -100, &count);   // 0-d, logits' dtype
//   Tensor dlogits = cross_entropy_backward(logits, targets, 1.0 / count);
#include <string_view>

#include "lib/core/dispatch.h"
#include "lib/ops/cpu/cross_entropy.h"
#include "lib/ops/cuda/cross_entropy.h"
#include "lib/ops/op_checks.h"
#include "lib/ops/ops.h"

namespace hetu::ops {

namespace {

void check_args(std::string_view op, const Tensor& logits, const Tensor& targets) {
  check_inputs(op, {&logits, &targets}, Backends::cpu_and_cuda);
  check_float_dtype(op, {&logits});
  check_index_dtype(op, targets);
  HT_CHECK(logits.dim() >= 1, "{}: expected logits with at least 1 dim, got a 0-d tensor", op);
  const Shape rows(logits.shape().begin(), logits.shape().end() - 1);
  HT_CHECK(targets.shape() == rows, "{}: targets shape {} does not match logits {} without its last dim", op,
           shape_str(targets.shape()), shape_str(logits.shape()));
}

// CUDA targets: the CPU kernel's check and message, computed on the device. Returns the kept rows.
int64_t check_cuda_targets(std::string_view op, const Tensor& targets, int64_t N, int64_t V, int64_t ignore_index) {
  int64_t bad_row = -1, bad_value = 0;
  const int64_t kept = cuda::check_targets(targets.dtype(), targets.raw_data(), N, V, ignore_index, &bad_row, &bad_value);
  HT_CHECK(bad_row < 0, "{}: target {} at row {} is outside [0, {}) and is not ignore_index ({})", op, bad_value,
           bad_row, V, ignore_index);
  return kept;
}

}  // namespace

Tensor cross_entropy_sum(const Tensor& logits, const Tensor& targets, int64_t ignore_index, int64_t* count) {
  constexpr std::string_view op = "cross_entropy_sum";
  check_args(op, logits, targets);
  const Tensor lc = logits.contiguous(), tc = targets.contiguous();
  const int64_t V = logits.size(-1), N = targets.numel();
  if constexpr (hetu::cuda::kBuilt) {
    if (logits.device().is_cuda()) {  // the loss is f32 (stat_dtype) even for bf16 logits
      hetu::cuda::DeviceGuard guard(logits.device());
      const int64_t kept = check_cuda_targets(op, tc, N, V, ignore_index);
      Tensor loss = empty({}, stat_dtype(logits), logits.device());
      cuda::cross_entropy_forward(logits.dtype(), tc.dtype(), loss.data<float>(), lc.raw_data(), tc.raw_data(), N, V,
                                  ignore_index);
      if (count != nullptr) *count = kept;
      return loss;
    }
  }
  Tensor loss = empty({}, logits.dtype(), logits.device());
  int64_t kept = 0;
  HT_DISPATCH_FLOAT(logits.dtype(), op, logits.device(), [&] {
    using logit_t = scalar_t;
    HT_DISPATCH_INDEX(targets.dtype(), op, targets.device(), [&] {
      cpu::cross_entropy_forward<logit_t, scalar_t>(loss.data<logit_t>(), &kept, lc.data<logit_t>(),
                                                    tc.data<scalar_t>(), N, V, ignore_index);
    });
  });
  if (count != nullptr) *count = kept;
  return loss;
}

Tensor cross_entropy_backward(const Tensor& logits, const Tensor& targets, double scale, int64_t ignore_index) {
  constexpr std::string_view op = "cross_entropy_backward";
  check_args(op, logits, targets);
  const Tensor lc = logits.contiguous(), tc = targets.contiguous();
  const int64_t V = logits.size(-1), N = targets.numel();
  Tensor dlogits = empty(logits.shape(), logits.dtype(), logits.device());
  if constexpr (hetu::cuda::kBuilt) {
    if (logits.device().is_cuda()) {
      hetu::cuda::DeviceGuard guard(logits.device());
      check_cuda_targets(op, tc, N, V, ignore_index);
      cuda::cross_entropy_backward(logits.dtype(), tc.dtype(), dlogits.raw_data(), lc.raw_data(), tc.raw_data(), N, V,
                                   ignore_index, static_cast<float>(scale));
      return dlogits;
    }
  }
  HT_DISPATCH_FLOAT(logits.dtype(), op, logits.device(), [&] {
    using logit_t = scalar_t;
    HT_DISPATCH_INDEX(targets.dtype(), op, targets.device(), [&] {
      cpu::cross_entropy_backward<logit_t, scalar_t>(dlogits.data<logit_t>(), lc.data<logit_t>(),
                                                     tc.data<scalar_t>(), N, V, ignore_index, scale);
    });
  });
  return dlogits;
}

}  // namespace hetu::ops
