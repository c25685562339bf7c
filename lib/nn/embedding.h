// Embedding table: weight (num_embeddings, dim); forward maps ids (...) to (..., dim).
#pragma once

#include "lib/nn/module.h"

namespace hetu::nn {

class Embedding : public Module {
 public:
  Embedding(const ParamInit& init, int64_t num_embeddings, int64_t dim, double std = 0.02);
  Tensor forward(const Tensor& ids) const;

  Tensor weight;
};

}  // namespace hetu::nn
