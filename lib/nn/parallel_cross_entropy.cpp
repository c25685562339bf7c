// Vocab-parallel cross-entropy as a composition of autograd ops and P -> D reductions.
#include "lib/nn/parallel_cross_entropy.h"

#include <algorithm>

#include "lib/autograd/functions.h"
#include "lib/autograd/grad_mode.h"
#include "lib/nn/tensor_parallel.h"
#include "lib/ops/ops.h"
#include "lib/util/error.h"

namespace hetu::nn {
namespace ag = autograd;
namespace {

// Flat indices (row * cols + target - offset) of the targets this rank holds (else 0), the
// (N) mask of those, and the (N) mask of the counted (not ignored) targets.
struct TargetIndex {
  Tensor flat, mine, counted;
};

template <class Id>
TargetIndex index_targets(const Tensor& targets, int64_t offset, int64_t cols, int64_t ignore_index, DType dtype) {
  const int64_t n = targets.numel();
  TargetIndex t{empty({n}, DType::i64), empty({n}, DType::f64), empty({n}, DType::f64)};
  const Id* y = targets.data<Id>();
  int64_t* flat = t.flat.data<int64_t>();
  double* mine = t.mine.data<double>();
  double* counted = t.counted.data<double>();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t col = static_cast<int64_t>(y[i]) - offset;
    const bool ignored = static_cast<int64_t>(y[i]) == ignore_index;
    const bool here = !ignored && col >= 0 && col < cols;
    flat[i] = here ? i * cols + col : 0;
    mine[i] = here ? 1.0 : 0.0;
    counted[i] = ignored ? 0.0 : 1.0;
  }
  t.mine = t.mine.to(dtype);
  t.counted = t.counted.to(dtype);
  return t;
}

}  // namespace

Tensor parallel_cross_entropy(const Tensor& logits, const Tensor& targets, int64_t vocab_offset, int64_t vocab,
                              const TensorParallel* tp, double normalizer, int64_t ignore_index) {
  HT_CHECK(logits.dim() == 2 && targets.dim() == 1 && targets.size(0) == logits.size(0),
           "parallel_cross_entropy: logits (N, V) and targets (N) expected, got {} and {}", shape_str(logits.shape()),
           shape_str(targets.shape()));
  const int64_t cols = std::clamp<int64_t>(vocab - vocab_offset, 0, logits.size(1));  // real (unpadded) columns here
  if (tp == nullptr || tp->size() == 1) {
    const Tensor z = cols == logits.size(1) ? logits : ag::narrow(logits, 1, 0, cols);
    return ag::cross_entropy(z, targets, ignore_index, normalizer);
  }
  HT_CHECK(cols > 0, "parallel_cross_entropy: rank {} of the tensor-parallel group holds only padding columns; use "
           "fewer tensor-parallel ranks for this vocabulary", tp->index());
  const int64_t n = logits.size(0);
  const Tensor z = ag::narrow(logits, 1, 0, cols);
  const Tensor y = targets.contiguous();
  TargetIndex index = y.dtype() == DType::i32 ? index_targets<int32_t>(y, vocab_offset, cols, ignore_index, logits.dtype())
                                              : index_targets<int64_t>(y, vocab_offset, cols, ignore_index, logits.dtype());
  // The row max over the whole vocabulary: a constant shift, so no gradient flows through it.
  Tensor row_max;
  {
    autograd::NoGradGuard no_grad;
    const Tensor local_max = ops::max(z.detach(), 1).contiguous();
    Tensor gathered = empty({tp->size() * n}, local_max.dtype());
    tp->comm().all_gather(local_max, gathered, tp->group());
    row_max = ops::max(gathered.view({tp->size(), n}), 0);
  }
  const Tensor shifted = ag::sub(z, ag::unsqueeze(row_max, 1));
  const Tensor sum_exp = tp->reduce_partial(ag::sum(ag::exp(shifted), {1}));
  const Tensor target_logit = tp->reduce_partial(
      ag::mul(ag::index_select(ag::reshape(shifted, {n * cols}), 0, index.flat), index.mine));
  const Tensor per_token = ag::mul(ag::sub(ag::log(sum_exp), target_logit), index.counted);
  double denominator = normalizer;
  if (denominator == 0) {
    autograd::NoGradGuard no_grad;
    denominator = ops::sum(index.counted).item();
  }
  return ag::mul_scalar(ag::sum(per_token), 1.0 / std::max(denominator, 1.0));
}

}  // namespace hetu::nn
