// Public cross_entropy_sum and cross_entropy_backward, and the vocabulary-shard pieces
// cross_entropy_shard_stats / cross_entropy_shard_backward: argument checks, then the CPU or
// CUDA kernel on contiguous copies. logits (N, V) with targets (N); more generally logits (..., V) with
// targets of logits' shape without the last dim, every leading position being one row.
//   int64_t count;
//   Tensor loss = cross_entropy_sum(logits, targets, -100, &count);   // 0-d, logits' dtype
//   Tensor dlogits = cross_entropy_backward(logits, targets, 1.0 / count);
#include <algorithm>
#include <string_view>

#include "lib/core/dispatch.h"
#include "lib/ops/cpu/cross_entropy.h"
#include "lib/ops/cuda/cross_entropy.h"
#include "lib/ops/op_checks.h"
#include "lib/ops/ops.h"
#include "lib/ops/f16_storage.h"

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
  if (stores_f16({&logits})) return cross_entropy_sum(widened(logits), targets, ignore_index, count);  // an f32 loss
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
  if (stores_f16({&logits})) return narrowed(cross_entropy_backward(widened(logits), targets, scale, ignore_index));
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

namespace {

struct ShardArgs {
  int64_t N, C, real;  // rows, columns, columns before the padding
};

ShardArgs check_shard_args(std::string_view op, const Tensor& logits, const Tensor& targets, int64_t vocab_offset,
                           int64_t vocab) {
  check_inputs(op, {&logits, &targets}, Backends::cpu_and_cuda);
  check_float_dtype(op, {&logits});
  check_index_dtype(op, targets);
  HT_CHECK(logits.dim() == 2 && targets.dim() == 1 && targets.size(0) == logits.size(0),
           "{}: logits (N, C) and targets (N) expected, got {} and {}", op, shape_str(logits.shape()),
           shape_str(targets.shape()));
  HT_CHECK(vocab_offset >= 0 && vocab >= 1, "{}: vocab_offset {} and vocab {}: expected offset >= 0, vocab >= 1", op,
           vocab_offset, vocab);
  const int64_t C = logits.size(1);
  return {logits.size(0), C, std::clamp<int64_t>(vocab - vocab_offset, 0, C)};
}

// A per-row statistic of `logits` given by the caller: (N), stat_dtype(logits), same device.
void check_row_stat(std::string_view op, std::string_view name, const Tensor& stat, const Tensor& logits) {
  check_inputs(op, {&logits, &stat}, Backends::cpu_and_cuda);
  HT_CHECK(stat.shape() == Shape{logits.size(0)}, "{}: {} has shape {}, expected ({},)", op, name,
           shape_str(stat.shape()), logits.size(0));
  HT_CHECK(stat.dtype() == stat_dtype(logits), "{}: {} is {}, expected {} for {} logits on {}", op, name,
           to_string(stat.dtype()), to_string(stat_dtype(logits)), to_string(logits.dtype()), logits.device().str());
}

}  // namespace

int64_t check_class_targets(std::string_view op, const Tensor& tc, int64_t N, int64_t vocab, int64_t ignore_index) {
  if constexpr (hetu::cuda::kBuilt) {
    if (tc.device().is_cuda()) return check_cuda_targets(op, tc, N, vocab, ignore_index);
  }
  int64_t kept = 0;
  HT_DISPATCH_INDEX(tc.dtype(), op, tc.device(), [&] {
    kept = cpu::check_targets<scalar_t>(op, tc.data<scalar_t>(), N, vocab, ignore_index);
  });
  return kept;
}

CrossEntropyShardStats cross_entropy_shard_stats(const Tensor& logits, const Tensor& targets, int64_t vocab_offset,
                                                 int64_t vocab, int64_t ignore_index, int64_t* count) {
  if (stores_f16({&logits})) {  // f32 statistics (stat_dtype)
    return cross_entropy_shard_stats(widened(logits), targets, vocab_offset, vocab, ignore_index, count);
  }
  constexpr std::string_view op = "cross_entropy_shard_stats";
  const ShardArgs a = check_shard_args(op, logits, targets, vocab_offset, vocab);
  const Tensor lc = logits.contiguous(), tc = targets.contiguous();
  const DType sd = stat_dtype(logits);
  CrossEntropyShardStats s{empty({a.N}, sd, logits.device()), empty({a.N}, sd, logits.device()),
                           empty({a.N}, sd, logits.device()), empty({a.N}, sd, logits.device())};
  if constexpr (hetu::cuda::kBuilt) {
    if (logits.device().is_cuda()) {
      hetu::cuda::DeviceGuard guard(logits.device());
      const int64_t kept = check_class_targets(op, tc, a.N, vocab, ignore_index);
      cuda::cross_entropy_shard_stats(logits.dtype(), tc.dtype(), s.max.data<float>(), s.sum_exp.data<float>(),
                                      s.target_logit.data<float>(), s.kept.data<float>(), lc.raw_data(), tc.raw_data(),
                                      a.N, a.C, a.real, vocab_offset, ignore_index);
      if (count != nullptr) *count = kept;
      return s;
    }
  }
  const int64_t kept = check_class_targets(op, tc, a.N, vocab, ignore_index);
  HT_DISPATCH_FLOAT(logits.dtype(), op, logits.device(), [&] {
    using logit_t = scalar_t;
    HT_DISPATCH_INDEX(targets.dtype(), op, targets.device(), [&] {
      cpu::cross_entropy_shard_stats<logit_t, scalar_t>(s.max.data<logit_t>(), s.sum_exp.data<logit_t>(),
                                                        s.target_logit.data<logit_t>(), s.kept.data<logit_t>(),
                                                        lc.data<logit_t>(), tc.data<scalar_t>(), a.N, a.C, a.real,
                                                        vocab_offset, ignore_index);
    });
  });
  if (count != nullptr) *count = kept;
  return s;
}

Tensor cross_entropy_shard_backward(const Tensor& grad, const Tensor& logits, const Tensor& targets, const Tensor& max,
                                    const Tensor& sum_exp, int64_t vocab_offset, int64_t vocab, int64_t ignore_index) {
  if (stores_f16({&logits})) {
    return narrowed(cross_entropy_shard_backward(grad, widened(logits), targets, max, sum_exp, vocab_offset, vocab,
                                                 ignore_index));
  }
  constexpr std::string_view op = "cross_entropy_shard_backward";
  const ShardArgs a = check_shard_args(op, logits, targets, vocab_offset, vocab);
  check_row_stat(op, "grad", grad, logits);
  check_row_stat(op, "max", max, logits);
  check_row_stat(op, "sum_exp", sum_exp, logits);
  const Tensor lc = logits.contiguous(), tc = targets.contiguous();
  const Tensor gc = grad.contiguous(), mc = max.contiguous(), sc = sum_exp.contiguous();
  Tensor dlogits = empty(logits.shape(), logits.dtype(), logits.device());
  if constexpr (hetu::cuda::kBuilt) {
    if (logits.device().is_cuda()) {
      hetu::cuda::DeviceGuard guard(logits.device());
      check_class_targets(op, tc, a.N, vocab, ignore_index);
      cuda::cross_entropy_shard_backward(logits.dtype(), tc.dtype(), dlogits.raw_data(), gc.data<float>(),
                                         lc.raw_data(), tc.raw_data(), mc.data<float>(), sc.data<float>(), a.N, a.C,
                                         a.real, vocab_offset, ignore_index);
      return dlogits;
    }
  }
  check_class_targets(op, tc, a.N, vocab, ignore_index);
  HT_DISPATCH_FLOAT(logits.dtype(), op, logits.device(), [&] {
    using logit_t = scalar_t;
    HT_DISPATCH_INDEX(targets.dtype(), op, targets.device(), [&] {
      cpu::cross_entropy_shard_backward<logit_t, scalar_t>(dlogits.data<logit_t>(), gc.data<logit_t>(),
                                                           lc.data<logit_t>(), tc.data<scalar_t>(), mc.data<logit_t>(),
                                                           sc.data<logit_t>(), a.N, a.C, a.real, vocab_offset,
                                                           ignore_index);
    });
  });
  return dlogits;
}

}  // namespace hetu::ops
