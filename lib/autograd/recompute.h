// Activation recomputation: trading a second forward for the memory of saved activations.
// See Note [Activation recomputation] in recompute.cpp.
//
//   none       every op keeps what its backward reads (the default)
//   selective  as none, except the attention core: it keeps q, k, v only and reruns its
//              forward (out and log-sum-exp) in backward (SelectiveRecomputeGuard); with
//              the fused attention that saves only the log-sum-exp (see the Note)
//   full       a block keeps only its input; backward reruns the block's forward with the
//              tape on and backpropagates through that (recompute_full)
//
//   Tensor y = autograd::recompute_full([&](const Tensor& in) { return block.forward(in); }, x);
#pragma once

#include <functional>
#include <optional>
#include <string_view>

#include "lib/core/tensor.h"

namespace hetu::autograd {

enum class Recompute { none, selective, full };

std::string_view recompute_name(Recompute mode);              // "none", "selective", "full"
std::optional<Recompute> parse_recompute(std::string_view name);  // nullopt for anything else

// fn(input) with nothing of fn's inside kept for backward: fn runs without the tape, and the
// output gets one node that keeps `input` and `fn`. Its backward reruns fn on a detached copy of
// input with the tape on and backpropagates the output's gradient through that graph: the
// parameters fn uses accumulate their .grad there, and input's gradient flows on. fn must
// compute the same values when rerun (the same kernels on the same input: hetu's ops are
// deterministic) and must outlive the backward. Without grad mode it is fn(input).
Tensor recompute_full(std::function<Tensor(const Tensor&)> fn, const Tensor& input);

// While one is alive on this thread, attention (functions.h) records a node that keeps q, k and
// v only and recomputes the attention forward in its backward.
class SelectiveRecomputeGuard {
 public:
  SelectiveRecomputeGuard();
  ~SelectiveRecomputeGuard();
  SelectiveRecomputeGuard(const SelectiveRecomputeGuard&) = delete;
  SelectiveRecomputeGuard& operator=(const SelectiveRecomputeGuard&) = delete;

 private:
  bool previous_;
};
bool selective_recompute();

}  // namespace hetu::autograd
