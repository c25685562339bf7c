// Embedding table: weight (num_embeddings, dim); forward maps ids (...) to (..., dim).
// Vocab parallel when the weight's rows are split over a tensor-parallel group
// (tensor_parallel.h): each rank looks up the ids in its row range, the others give zeros,
// and the partial results are summed.
#pragma once

#include <memory>

#include "lib/nn/module.h"

namespace hetu::nn {

class Embedding : public Module {
 public:
  Embedding(const ParamInit& init, int64_t num_embeddings, int64_t dim, double std = 0.02);
  // Rows of `ids` (any device; looked up on the weight's) as `dtype` (default: the weight's).
  // Vocab parallel, the partial rows are cast before they are summed over the group.
  Tensor forward(const Tensor& ids) const { return forward(ids, weight.dtype()); }
  Tensor forward(const Tensor& ids, DType dtype) const;
  // First row this rank holds (0 unless vocab parallel).
  int64_t row_offset() const { return row_offset_; }

  Tensor weight;

 private:
  std::shared_ptr<TensorParallel> tp_;  // set when the rows are split
  int64_t row_offset_ = 0;
};

}  // namespace hetu::nn
