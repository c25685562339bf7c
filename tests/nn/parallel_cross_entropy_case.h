// One run of nn::parallel_cross_entropy over `tp` ranks in threads (thread_group_comm.h), and
// the single-device reference it must match: the same logits whole, through
// autograd::cross_entropy in f64 on the CPU. Used by tests/nn (CPU) and tests/cuda (GPU).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "lib/autograd/functions.h"
#include "lib/nn/parallel_cross_entropy.h"
#include "lib/nn/tensor_parallel.h"
#include "tests/nn/thread_group_comm.h"

namespace hetu::test {

struct CrossEntropyRun {
  std::vector<double> loss;               // per rank
  std::vector<std::vector<double>> grad;  // per rank: d loss / d its (N, C) logits, row-major
};

// Columns [r·C, r·C + C) of full (N, V) for C = ceil(V / tp); columns past V are padding,
// filled with 30 (they must take no part: counted, they would dominate the softmax).
inline Tensor padded_shard(const Tensor& whole, int64_t r, int64_t C) {
  const int64_t N = whole.size(0), V = whole.size(1);
  Tensor s = full({N, C}, 30.0, whole.dtype());
  const int64_t real = std::max<int64_t>(0, std::min(C, V - r * C));
  if (real > 0) s.narrow(1, 0, real).copy_from(whole.narrow(1, r * C, real));
  return s;
}

// How the backward is seeded on the ranks of the group: the trainer's way (1 on rank 0, 0
// elsewhere), or 1 everywhere (each rank's seed is a partial gradient: the sum counts).
enum class Seeds { first_rank, every_rank };

// Each rank's loss and gradient. through_op: the logits come out of an op (mul_scalar by 1),
// so the node's input edge is another node, not a leaf.
inline CrossEntropyRun run_parallel_cross_entropy(const Tensor& whole, const Tensor& targets, int64_t tp, Device device,
                                                  DType dtype, double normalizer, Seeds seeds, bool through_op) {
  const int64_t C = (whole.size(1) + tp - 1) / tp;
  CrossEntropyRun out{std::vector<double>(static_cast<size_t>(tp)), std::vector<std::vector<double>>(static_cast<size_t>(tp))};
  ThreadGroup group(tp);
  group.run([&](int64_t r, Communicator& comm) {
    const nn::TensorParallel parallel(&comm, DeviceGroup::range(0, tp), r,
                                      nn::group_placements({}, DeviceGroup::range(0, tp)));
    Tensor leaf = padded_shard(whole, r, C).to(dtype).to(device);
    leaf.set_requires_grad(true);
    const Tensor logits = through_op ? autograd::mul_scalar(leaf, 1.0) : leaf;
    const Tensor loss =
        nn::parallel_cross_entropy(logits, targets.to(device), r * C, whole.size(1), &parallel, normalizer);
    out.loss[static_cast<size_t>(r)] = loss.item();
    const double seed = seeds == Seeds::every_rank || r == 0 ? 1.0 : 0.0;
    autograd::backward(loss, full(loss.shape(), seed, loss.dtype(), loss.device()));
    out.grad[static_cast<size_t>(r)] = to_vector(leaf.grad());
  });
  return out;
}

struct CrossEntropyReference {
  double loss;
  std::vector<double> grad;  // (N, V)
};

inline CrossEntropyReference reference_cross_entropy(const Tensor& whole, const Tensor& targets, double normalizer) {
  Tensor x = whole.to(DType::f64).clone();
  x.set_requires_grad(true);
  const Tensor loss = autograd::cross_entropy(x, targets, -100, normalizer);
  autograd::backward(loss);
  return {loss.item(), to_vector(x.grad())};
}

// The reference gradient's columns of rank r's shard (padding columns 0), times `factor`.
inline std::vector<double> reference_shard_grad(const std::vector<double>& grad, int64_t N, int64_t V, int64_t r,
                                                int64_t C, double factor) {
  std::vector<double> g(static_cast<size_t>(N * C), 0.0);
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t c = 0; c < C && r * C + c < V; ++c) {
      g[static_cast<size_t>(n * C + c)] = factor * grad[static_cast<size_t>(n * V + r * C + c)];
    }
  }
  return g;
}

}  // namespace hetu::test
