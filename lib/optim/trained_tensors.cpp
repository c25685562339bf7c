// The trained tensors of a placement.
#include "lib/optim/trained_tensors.h"

#include "lib/optim/adamw.h"

namespace hetu::optim {

std::vector<TrainedTensor> trained_tensors(const TensorPlacement& p) {
  std::vector<TrainedTensor> out{{p.name, false}};
  for (std::string& state : state_names(p.name)) out.push_back({std::move(state), true});
  return out;
}

}  // namespace hetu::optim
