// Piece-by-piece timing of one micro-batch of a model part, and of its AdamW step.
#include "app/profile_measure.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "lib/autograd/engine.h"
#include "lib/core/cuda_runtime.h"
#include "lib/core/storage.h"
#include "lib/nn/tensor_parallel.h"
#include "lib/optim/adamw.h"
#include "lib/ops/ops.h"

namespace hetu::app {
namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Times fn to its end on the device, the emulated slowdown of it included.
template <typename Fn>
double timed(Device device, const std::function<void()>& settle, Fn&& fn) {
  const double start = now_s();
  fn();
  if (device.is_cuda()) cuda::synchronize(device.index);
  settle();
  return now_s() - start;
}

double bytes_in_use(Device device) {
  return device.is_cuda() ? static_cast<double>(cuda::memory_stats(device.index).allocated)
                          : static_cast<double>(cpu_memory_usage().in_use);
}

// The hidden state as the input of the next piece: no history, its own gradient.
Tensor cut(const Tensor& x) {
  Tensor y = x.detach();
  y.set_requires_grad(true);
  return y;
}

}  // namespace

PieceTimes time_pieces(const LanguageModel& model, Device device, int64_t micro_batch, int64_t seq_len,
                       const std::function<void()>& settle, int repeats) {
  const ModelConfig& config = model.config();
  const int64_t layers = config.layers;
  const Tensor ids = full({micro_batch, seq_len}, 7, DType::i64).to(device);
  const Tensor targets = full({micro_batch, seq_len}, 11, DType::i64).to(device);
  // The loss is the same on every rank of a tp group; one of them seeds its backward.
  const bool seeds = model.tensor_parallel() == nullptr || model.tensor_parallel()->index() == 0;
  PieceTimes sum;
  for (int run = 0; run <= repeats; ++run) {  // run 0 warms up
    PieceTimes t;
    Tensor embedded;
    t.embed_forward_s = timed(device, settle, [&] { embedded = model.embed(ids, 0); });
    std::vector<Tensor> inputs, outputs;
    Tensor x = cut(embedded);
    for (int64_t layer = 0; layer < layers; ++layer) {
      inputs.push_back(x);
      const double before = bytes_in_use(device);
      t.layer_forward_s += timed(device, settle, [&] { outputs.push_back(model.block(layer, x, nullptr)); });
      t.layer_activation_bytes += bytes_in_use(device) - before;
      x = cut(outputs.back());
    }
    Tensor loss;
    t.head_forward_s = timed(device, settle, [&] { loss = model.head_loss(x, targets); });
    t.head_backward_s = timed(device, settle, [&] {
      autograd::backward(loss, full({}, seeds ? 1.0 : 0.0, loss.dtype(), loss.device()));
    });
    Tensor grad = x.grad();
    for (int64_t layer = layers - 1; layer >= 0; --layer) {
      const size_t l = static_cast<size_t>(layer);
      t.layer_backward_s += timed(device, settle, [&] { autograd::backward(outputs[l], grad); });
      grad = inputs[l].grad();
    }
    t.embed_backward_s = timed(device, settle, [&] { autograd::backward(embedded, grad); });
    model.zero_grad();
    if (run == 0) continue;
    for (auto field : {&PieceTimes::embed_forward_s, &PieceTimes::embed_backward_s, &PieceTimes::layer_forward_s,
                       &PieceTimes::layer_backward_s, &PieceTimes::head_forward_s, &PieceTimes::head_backward_s,
                       &PieceTimes::layer_activation_bytes}) {
      sum.*field += t.*field;
    }
  }
  const double n = repeats, L = static_cast<double>(layers);
  PieceTimes mean;
  mean.embed_forward_s = sum.embed_forward_s / n;
  mean.embed_backward_s = sum.embed_backward_s / n;
  mean.layer_forward_s = sum.layer_forward_s / n / L;
  mean.layer_backward_s = sum.layer_backward_s / n / L;
  mean.head_forward_s = sum.head_forward_s / n;
  mean.head_backward_s = sum.head_backward_s / n;
  mean.layer_activation_bytes = std::max(0.0, sum.layer_activation_bytes / n / L);
  return mean;
}

double time_optimizer_step(const LanguageModel& model, const std::function<void()>& settle, int repeats) {
  std::vector<nn::NamedParameter> params = model.named_parameters();
  for (nn::NamedParameter& p : params) {
    p.tensor.set_grad(full(p.tensor.shape(), 1e-3, p.tensor.dtype(), p.tensor.device()));
  }
  optim::AdamW adamw(params, optim::AdamWConfig{});
  const Device device = params.empty() ? Device::cpu() : params[0].tensor.device();
  std::vector<double> times;
  for (int run = 0; run <= repeats; ++run) {
    const double t = timed(device, settle, [&] { adamw.step(1e-9); });
    if (run > 0) times.push_back(t);
  }
  model.zero_grad();
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace hetu::app
