// Embedding table.
#include "lib/nn/embedding.h"

#include "lib/autograd/functions.h"

namespace hetu::nn {

Embedding::Embedding(const ParamInit& init, int64_t num_embeddings, int64_t dim, double std) {
  weight = register_parameter("weight", init.normal("weight", {num_embeddings, dim}, std));
}

Tensor Embedding::forward(const Tensor& ids) const { return autograd::embedding(weight, ids); }

}  // namespace hetu::nn
