// Piece-by-piece timing of one micro-batch of a model part, and of its AdamW step, over
// interleaved windows (Note [Profile windows] in the header).
#include "lib/profile/profile_measure.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <vector>

#include "lib/autograd/engine.h"
#include "lib/core/cuda_runtime.h"
#include "lib/core/storage.h"
#include "lib/nn/tensor_parallel.h"
#include "lib/ops/ops.h"
#include "lib/optim/adamw.h"
#include "lib/util/error.h"
#include "lib/util/wait_trace.h"

namespace hetu::profile {
namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// fn's time to its end on the device, on the emulated device: pacing.slowdown x it (the
// sleep that emulates the slowdown comes later, outside every timing: see the header; what a
// communication inside fn slept for it is taken out).
template <typename Fn>
double timed(Device device, const ComputePacing& pacing, Fn&& fn, long piece = -1) {
  const wait_trace::Span traced("piece", piece);  // HETU_WAIT_TRACE: piece codes, see time_one_pass
  const double start = now_s(), slept_before = pacing.slept();
  const double emulated_before = pacing.emulated ? pacing.emulated() : 0.0;
  fn();
  if (device.is_cuda()) cuda::synchronize(device.index);
  const double awake = now_s() - start - (pacing.slept() - slept_before);
  if (!pacing.emulated) return pacing.slowdown * awake;
  const double emulated = pacing.emulated() - emulated_before;
  return emulated + std::max(0.0, awake - emulated / pacing.slowdown);
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

// The measurements of one pass, each averaged over the middle windows.
constexpr double PieceTimes::*kMeasured[] = {
    &PieceTimes::embed_forward_s, &PieceTimes::embed_backward_s, &PieceTimes::layer_forward_s,
    &PieceTimes::layer_backward_s, &PieceTimes::head_forward_s,  &PieceTimes::head_backward_s,
    &PieceTimes::layer_activation_bytes,
};

// Every piece of one micro-batch, forward then backward; layer figures per layer. `span`: its
// HETU_WAIT_TRACE name ("pass" for a timed pass, "settle" for a settling one).
PieceTimes time_one_pass(const LanguageModel& model, Device device, const Tensor& ids, const Tensor& targets,
                         const ComputePacing& pacing, const char* span) {
  const int64_t layers = model.config().layers;
  // The loss is the same on every rank of a tp group; one of them seeds its backward.
  const bool seeds = model.tensor_parallel() == nullptr || model.tensor_parallel()->index() == 0;
  // HETU_WAIT_TRACE's span of the pass; its pieces' codes: embedding 0 / 3, head 1 / 2 (forward /
  // backward), layer l 10 + l / 20 + l, AdamW 4.
  const wait_trace::Span traced(span, model.tensor_parallel() == nullptr ? 1 : model.tensor_parallel()->size(),
                                ids.size(0));
  PieceTimes t;
  Tensor embedded;
  t.embed_forward_s = timed(device, pacing, [&] { embedded = model.embed(ids, 0); }, 0);
  std::vector<Tensor> inputs, outputs;
  Tensor x = cut(embedded);
  for (int64_t layer = 0; layer < layers; ++layer) {
    inputs.push_back(x);
    const double before = bytes_in_use(device);
    t.layer_forward_s += timed(device, pacing, [&] { outputs.push_back(model.block(layer, x, nullptr)); }, 10 + layer);
    t.layer_activation_bytes += bytes_in_use(device) - before;
    x = cut(outputs.back());
  }
  Tensor loss;
  t.head_forward_s = timed(device, pacing, [&] { loss = model.head_loss(x, targets); }, 1);
  pacing.settle();  // as a pipeline stage sleeps before it sends its forward's output
  t.head_backward_s = timed(device, pacing, [&] {
    autograd::backward(loss, full({}, seeds ? 1.0 : 0.0, loss.dtype(), loss.device()));
  }, 2);
  Tensor grad = x.grad();
  for (int64_t layer = layers - 1; layer >= 0; --layer) {
    const size_t l = static_cast<size_t>(layer);
    t.layer_backward_s += timed(device, pacing, [&] { autograd::backward(outputs[l], grad); }, 20 + layer);
    grad = inputs[l].grad();
  }
  t.embed_backward_s = timed(device, pacing, [&] { autograd::backward(embedded, grad); }, 3);
  pacing.settle();  // and its backward's
  const double L = static_cast<double>(layers);
  t.layer_forward_s /= L, t.layer_backward_s /= L, t.layer_activation_bytes /= L;
  return t;
}

// Every parameter holding a gradient (a small constant), as during a training step after its
// first micro-batch (Note [Profile windows]: held gradients).
void hold_gradients(std::vector<nn::NamedParameter>& params) {
  for (nn::NamedParameter& p : params) {
    p.tensor.set_grad(full(p.tensor.shape(), 1e-3, p.tensor.dtype(), p.tensor.device()));
  }
}

// One micro-batch, every piece forward and backward.
double whole_pass_s(const PieceTimes& t, int64_t layers) {
  const double per_layer = t.layer_forward_s + t.layer_backward_s;
  return t.embed_forward_s + t.embed_backward_s + static_cast<double>(layers) * per_layer + t.head_forward_s +
         t.head_backward_s;
}

}  // namespace

Tensor profile_tokens(int64_t micro_batch, int64_t seq_len, int64_t vocab, int64_t first) {
  HT_CHECK(micro_batch >= 1 && seq_len >= 1 && vocab >= 1, "profile: tokens of {} x {} over a vocabulary of {}",
           micro_batch, seq_len, vocab);
  // A stride near the golden-ratio share of the vocabulary, coprime to it: consecutive ids land
  // far apart (every range of the vocabulary gets its share of any run of them), and all
  // `vocab` ids come once before any repeats.
  int64_t stride = std::max<int64_t>(1, std::llround(0.6180339887 * static_cast<double>(vocab)));
  while (std::gcd(stride, vocab) != 1) ++stride;
  std::vector<int64_t> ids(static_cast<size_t>(micro_batch * seq_len));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = (first + static_cast<int64_t>(i) * stride) % vocab;
  return tensor_from(ids, {micro_batch, seq_len});
}

PieceTimes estimate_windows(const std::vector<PieceTimes>& windows, int64_t layers) {
  std::vector<double> totals(windows.size());
  std::transform(windows.begin(), windows.end(), totals.begin(),
                 [&](const PieceTimes& w) { return whole_pass_s(w, layers); });
  const std::vector<size_t> kept = middle_windows(totals);
  PieceTimes out;
  for (double PieceTimes::*field : kMeasured) {
    for (size_t w : kept) out.*field += windows[w].*field;
    out.*field /= static_cast<double>(kept.size());
  }
  out.layer_activation_bytes = std::max(0.0, out.layer_activation_bytes);
  out.spread = window_spread(totals);
  return out;
}

std::vector<size_t> middle_windows(const std::vector<double>& totals) {
  HT_CHECK(!totals.empty(), "profile: no windows");
  std::vector<size_t> order(totals.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return totals[a] < totals[b]; });
  const std::ptrdiff_t trim = static_cast<std::ptrdiff_t>(totals.size() / 3);
  return {order.begin() + trim, order.end() - trim};
}

double window_trimmed_mean(const std::vector<double>& samples) {
  double sum = 0;
  const std::vector<size_t> kept = middle_windows(samples);
  for (size_t w : kept) sum += samples[w];
  return sum / static_cast<double>(kept.size());
}

double window_median(std::vector<double> samples) {
  HT_CHECK(!samples.empty(), "profile: a median of no windows");
  const size_t n = samples.size(), mid = n / 2;
  std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(mid), samples.end());
  const double upper = samples[mid];
  if (n % 2 == 1) return upper;
  return (*std::max_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(mid)) + upper) / 2;
}

double window_spread(const std::vector<double>& samples) {
  const double median = window_median(samples);
  if (median == 0) return 0;
  std::vector<double> deviations;
  for (double s : samples) deviations.push_back(std::abs(s - median));
  return window_median(std::move(deviations)) / std::abs(median);
}

void measure_windows(const LanguageModel& model, Device device, std::span<const int64_t> micro_batches,
                     int64_t seq_len, const ComputePacing& pacing, ProfileWindows windows, PartWindows& into) {
  HT_CHECK(windows.warmup >= 0 && windows.measured >= 1 && pacing.slowdown >= 1,
           "profile: {} warm-up and {} measured windows at slowdown {}", windows.warmup, windows.measured,
           pacing.slowdown);
  std::vector<std::pair<Tensor, Tensor>> batches;  // ids and targets per micro-batch size
  const int64_t vocab = model.config().vocab;
  for (int64_t mb : micro_batches) {  // the targets: the same walk from another start
    batches.emplace_back(profile_tokens(mb, seq_len, vocab, 0).to(device), profile_tokens(mb, seq_len, vocab, 7).to(device));
  }
  std::vector<nn::NamedParameter> params = model.named_parameters();
  optim::AdamW adamw(params, optim::AdamWConfig{});
  hold_gradients(params);
  into.micro_batches.resize(micro_batches.size());
  for (int w = 0; w < windows.warmup + windows.measured; ++w) {
    const bool measured = w >= windows.warmup;
    for (size_t m = 0; m < batches.size(); ++m) {
      // The settling pass, untimed: the timed one then follows a pass of its own size, as
      // every micro-batch of a training step but its first does (Note [Profile windows]).
      time_one_pass(model, device, batches[m].first, batches[m].second, pacing, "settle");
      const PieceTimes t = time_one_pass(model, device, batches[m].first, batches[m].second, pacing, "pass");
      if (measured) into.micro_batches[m].push_back(t);
    }
    hold_gradients(params);  // the step's gradients; the next window's passes add to them
    const double step_s = timed(device, pacing, [&] { adamw.step(1e-9); }, 4);
    pacing.settle();
    if (measured) into.optimizer_s.push_back(step_s);
  }
  model.zero_grad();
}

PartTimes estimate_part(const PartWindows& windows, int64_t layers) {
  PartTimes out;
  for (const std::vector<PieceTimes>& s : windows.micro_batches) out.micro_batches.push_back(estimate_windows(s, layers));
  out.optimizer_s = window_trimmed_mean(windows.optimizer_s);
  return out;
}

PartTimes time_part(const LanguageModel& model, Device device, std::span<const int64_t> micro_batches,
                    int64_t seq_len, const ComputePacing& pacing, ProfileWindows windows) {
  PartWindows gathered;
  measure_windows(model, device, micro_batches, seq_len, pacing, windows, gathered);
  return estimate_part(gathered, model.config().layers);
}

}  // namespace hetu::profile
