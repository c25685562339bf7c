// The tensors one parameter's placement stands for in a training state, and the annotation
// each follows: the parameter itself its param annotation, each optimizer state
// (state_names) the state annotation. The one answer to "where does this stored tensor live
// under a strategy" that the Trainer's strategy switch, the checkpoint store (save and
// reshard on load) and `hetu ckpt reshard` all read.
//
//   for (const TrainedTensor& t : trained_tensors(p))   // p: the placement of "wte.weight"
//     t.annotation(p);  // "wte.weight": p.param; "optim.m/wte.weight", "optim.v/wte.weight": p.state
#pragma once

#include <string>
#include <vector>

#include "lib/hspmd/tensor_placement.h"

namespace hetu::optim {

struct TrainedTensor {
  std::string name;             // "h.0.attn.c_attn.weight", "optim.m/h.0.attn.c_attn.weight", ...
  bool optimizer_state = false;  // false: the parameter
  // Its annotation in `p` (the placement of its parameter under any strategy).
  const Union& annotation(const TensorPlacement& p) const { return optimizer_state ? p.state : p.param; }
};

// The parameter of `p`, then its optimizer states, in that order for every placement.
std::vector<TrainedTensor> trained_tensors(const TensorPlacement& p);

}  // namespace hetu::optim
