// Embedding table, whole or vocab parallel.
#include "lib/nn/embedding.h"

#include "lib/autograd/functions.h"
#include "lib/nn/tensor_parallel.h"

namespace hetu::nn {
namespace {

// ids shifted into [0, rows) (out-of-range ids -> row 0) and a (..., 1) mask of the in-range ones.
template <class Id>
void localise(const Tensor& ids, int64_t offset, int64_t rows, Tensor& local, Tensor& mask) {
  const Id* in = ids.data<Id>();
  int64_t* out = local.data<int64_t>();
  float* keep = mask.data<float>();
  for (int64_t i = 0; i < ids.numel(); ++i) {
    const int64_t row = static_cast<int64_t>(in[i]) - offset;
    const bool mine = row >= 0 && row < rows;
    out[i] = mine ? row : 0;
    keep[i] = mine ? 1.0f : 0.0f;
  }
}

}  // namespace

Embedding::Embedding(const ParamInit& init, int64_t num_embeddings, int64_t dim, double std) {
  weight = register_parameter("weight", init.normal("weight", {num_embeddings, dim}, std));
  if (init.tp && init.tp->size() > 1) {
    const TensorPlacement& p = init.tp->placement(init.name("weight"));
    if (init.tp->local_state(p).split_count(0) > 1) {
      tp_ = init.tp;
      row_offset_ = init.tp->local_box(p).offset[0];
    }
  }
}

Tensor Embedding::forward(const Tensor& ids, DType dtype) const {
  if (!tp_) return autograd::cast(autograd::embedding(weight, ids.to(weight.device())), dtype);
  const Tensor contiguous_ids = ids.to(Device::cpu()).contiguous();  // a few ids: shifted on the host
  Tensor local = empty(ids.shape(), DType::i64);
  Shape mask_shape = ids.shape();
  mask_shape.push_back(1);
  Tensor mask = empty(mask_shape, DType::f32);
  if (ids.dtype() == DType::i32) {
    localise<int32_t>(contiguous_ids, row_offset_, weight.size(0), local, mask);
  } else {
    HT_CHECK(ids.dtype() == DType::i64, "embedding: ids must be i32 or i64, got {}", to_string(ids.dtype()));
    localise<int64_t>(contiguous_ids, row_offset_, weight.size(0), local, mask);
  }
  if (weight.dtype() != DType::f32) mask = mask.to(weight.dtype());
  local = local.to(weight.device());
  mask = mask.to(weight.device());
  const Tensor partial = autograd::cast(autograd::mul(autograd::embedding(weight, local), mask), dtype);
  return tp_->reduce_partial(partial);
}

}  // namespace hetu::nn
