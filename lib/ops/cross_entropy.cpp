// Public cross_entropy_sum and cross_entropy_backward: argument checks, then the CPU kernel
// on contiguous copies. logits (N, V) with targets (N); more generally logits (..., V) with
// targets of logits' shape without the last dim, every leading position being one row.
//   int64_t count;
//   Tensor loss = cross_entropy_sum(logits, targets, -100, &count);   // 0-d, logits' dtype
//   Tensor dlogits = cross_entropy_backward(logits, targets, 1.0 / count);
#include <string_view>

#include "lib/core/dispatch.h"
#include "lib/ops/cpu/cross_entropy.h"
#include "lib/ops/op_checks.h"
#include "lib/ops/ops.h"

namespace hetu::ops {

namespace {

void check_args(std::string_view op, const Tensor& logits, const Tensor& targets) {
  check_inputs(op, {&logits, &targets});
  check_float_dtype(op, {&logits});
  check_index_dtype(op, targets);
  HT_CHECK(logits.dim() >= 1, "{}: expected logits with at least 1 dim, got a 0-d tensor", op);
  const Shape rows(logits.shape().begin(), logits.shape().end() - 1);
  HT_CHECK(targets.shape() == rows, "{}: targets shape {} does not match logits {} without its last dim", op,
           shape_str(targets.shape()), shape_str(logits.shape()));
}

}  // namespace

Tensor cross_entropy_sum(const Tensor& logits, const Tensor& targets, int64_t ignore_index, int64_t* count) {
  constexpr std::string_view op = "cross_entropy_sum";
  check_args(op, logits, targets);
  const Tensor lc = logits.contiguous(), tc = targets.contiguous();
  const int64_t V = logits.size(-1), N = targets.numel();
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
