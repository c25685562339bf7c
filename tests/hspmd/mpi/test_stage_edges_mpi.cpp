// A pipeline edge under tensor parallelism moves one activation per micro-batch across, not
// one copy per tp rank (Note [Sliced stage edges] in lib/pipeline/stage_executor.cpp): a
// two-stage pipeline of elementwise stages, run by StageExecutor on real ranks, with a
// communicator that counts the bytes each rank's send/recv batches send. Stages by world
// size: 2 ranks {0} -> {1}, 3 ranks {0} -> {1, 2}, 4 ranks {0, 1} -> {2, 3}. Checked against
// hand-computed values: every receiving rank sees the whole activation, the parameter
// gradient summed over the first stage's ranks is the analytic one, and exactly one
// activation (forward) and one gradient (backward) per micro-batch cross the edge.
#include <catch2/catch.hpp>

#include "lib/autograd/functions.h"
#include "lib/pipeline/stage_executor.h"
#include "tests/hspmd/mpi/mpi_test_utils.h"

namespace hetu::test {
namespace {

namespace ag = hetu::autograd;

// Forwards everything to the world communicator; counts the bytes its p2p batches send.
class CountingComm final : public Communicator {
 public:
  explicit CountingComm(Communicator& inner) : inner_(inner) {}
  DeviceId rank() const override { return inner_.rank(); }
  int64_t world_size() const override { return inner_.world_size(); }
  std::string backend() const override { return inner_.backend(); }
  Device device() const override { return inner_.device(); }
  void all_reduce(const Tensor& b, const DeviceGroup& g) override { inner_.all_reduce(b, g); }
  void all_gather(const Tensor& in, const Tensor& out, const DeviceGroup& g, std::span<const int64_t> counts) override {
    inner_.all_gather(in, out, g, counts);
  }
  void reduce_scatter(const Tensor& in, const Tensor& out, const DeviceGroup& g,
                      std::span<const int64_t> counts) override {
    inner_.reduce_scatter(in, out, g, counts);
  }
  void all_to_all(const Tensor& in, const Tensor& out, const DeviceGroup& g, std::span<const int64_t> send_counts,
                  std::span<const int64_t> recv_counts) override {
    inner_.all_to_all(in, out, g, send_counts, recv_counts);
  }
  void broadcast(const Tensor& b, DeviceId root, const DeviceGroup& g) override { inner_.broadcast(b, root, g); }
  void send(const Tensor& t, DeviceId peer) override {
    sent_bytes += static_cast<int64_t>(t.numel() * dtype_size(t.dtype()));
    inner_.send(t, peer);
  }
  void recv(const Tensor& t, DeviceId peer) override { inner_.recv(t, peer); }
  void batch_send_recv(std::span<const P2POp> ops) override {
    for (const P2POp& op : ops)
      if (op.kind == P2PKind::send) sent_bytes += static_cast<int64_t>(op.tensor.numel() * dtype_size(op.tensor.dtype()));
    inner_.batch_send_recv(ops);
  }
  void barrier(const DeviceGroup& g) override { inner_.barrier(g); }

  int64_t sent_bytes = 0;

 private:
  Communicator& inner_;
};

constexpr int64_t kT = 4, kC = 6, kMicroBatches = 2;

// f(x) = base * w0 on the first stage (base[t, c] = t + c / 10), g(h) = Σ h * w1 on the last.
double base_at(int64_t t, int64_t c) { return static_cast<double>(t) + static_cast<double>(c) / 10; }
double w0_at(int64_t c) { return 1.0 + 0.5 * static_cast<double>(c); }
double w1_at(int64_t c) { return 2.0 - 0.25 * static_cast<double>(c); }

Tensor base_activation() {
  std::vector<float> values;
  for (int64_t t = 0; t < kT; ++t)
    for (int64_t c = 0; c < kC; ++c) values.push_back(static_cast<float>(base_at(t, c)));
  return tensor_from(values, {1, kT, kC});
}

class ElementwiseStage final : public pipeline::StageCompute {
 public:
  explicit ElementwiseStage(bool first) : first_(first) {
    std::vector<float> values;
    for (int64_t c = 0; c < kC; ++c) values.push_back(static_cast<float>(first ? w0_at(c) : w1_at(c)));
    w_ = tensor_from(values, {kC});
    w_.set_requires_grad(true);
  }
  Tensor forward(const Tensor& input, std::span<const int64_t>) override {
    if (first_) return ag::mul(base_activation(), w_);
    received.push_back(input.clone());
    return ag::mul(input, w_);
  }
  Tensor loss(const Tensor& output, const Tensor&, double normalizer) override {
    return ag::mul_scalar(ag::sum(output), 1.0 / normalizer);
  }
  const Tensor& weight() const { return w_; }
  std::vector<Tensor> received;

 private:
  bool first_;
  Tensor w_;
};

}  // namespace

TEST_CASE("stage edges under tp: one activation crosses per micro-batch, gathered whole", "[mpi][pipeline]") {
  const int64_t n = world().world_size();
  const int64_t senders = n == 4 ? 2 : 1;
  std::vector<DeviceId> first, last;
  for (DeviceId r = 0; r < n; ++r) (r < senders ? first : last).push_back(r);
  pipeline::ParallelLayout layout;
  layout.global_batch = kMicroBatches;
  layout.replicas = {{.stages = {{DeviceGroup(first), 0, 0}, {DeviceGroup(last), 1, 1}},
                      .batch = kMicroBatches,
                      .micro_batch = 1}};
  const DeviceId me = world().rank();
  const bool on_first = me < senders;
  const pipeline::Position position{0, on_first ? 0 : 1, on_first ? me : me - senders};

  CountingComm comm(world());
  PlanCache plans;
  pipeline::StageExecutor executor(layout, position, &comm, plans, {1, kT, kC});
  ElementwiseStage compute(on_first);
  std::vector<pipeline::MicroBatch> micro_batches;
  for (int64_t i = 0; i < kMicroBatches; ++i) micro_batches.push_back({zeros({1, kT}), zeros({1, kT})});
  executor.train(compute, micro_batches, 1.0);

  bool ok = true;
  if (!on_first) {  // every receiving rank holds the whole activation base * w0
    ok = ok && static_cast<int64_t>(compute.received.size()) == kMicroBatches;
    for (const Tensor& h : compute.received) {
      const std::vector<double> got = to_vector(h);
      for (int64_t t = 0; t < kT; ++t)
        for (int64_t c = 0; c < kC; ++c)
          ok = ok && got[static_cast<size_t>(t * kC + c)] == Approx(base_at(t, c) * w0_at(c));
    }
  }
  // d loss / d w0[c] = Σ_micro-batches Σ_t base[t, c] * w1[c], summed over the first stage's
  // ranks (its gradient is partial: the sum convention of redistribute.h).
  Tensor grad = on_first ? compute.weight().grad().clone() : zeros({kC});
  std::vector<double> mine = to_vector(grad);
  mine.push_back(on_first ? static_cast<double>(comm.sent_bytes) : 0.0);
  mine.push_back(on_first ? 0.0 : static_cast<double>(comm.sent_bytes));
  Tensor summed = tensor_from(mine, {kC + 2});
  world().all_reduce(summed, world().world());
  const std::vector<double> everything = to_vector(summed);
  for (int64_t c = 0; c < kC; ++c) {
    double expected = 0;
    for (int64_t t = 0; t < kT; ++t) expected += static_cast<double>(kMicroBatches) * base_at(t, c) * w1_at(c);
    ok = ok && everything[static_cast<size_t>(c)] == Approx(expected);
  }
  const double activation_bytes = static_cast<double>(kMicroBatches * kT * kC * 4);
  INFO("forward bytes " << everything[kC] << ", backward bytes " << everything[kC + 1] << ", one activation "
                        << activation_bytes / kMicroBatches);
  CHECK(agree(ok));
  CHECK(everything[kC] == activation_bytes);      // forward: one activation per micro-batch
  CHECK(everything[kC + 1] == activation_bytes);  // backward: one gradient per micro-batch
}

}  // namespace hetu::test
