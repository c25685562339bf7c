// EmulatedCommunicator on a fake clock over a communicator that records calls: the sleeps it
// asks for (slowdown x the compute since the last communication; latency + bytes / bandwidth
// for messages and ring collectives across emulated nodes) against values computed by hand
// here from Note [Emulated devices].
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "lib/hspmd/emulated_comm.h"

using namespace hetu;

namespace {

// Records the name of each call; moves nothing.
class RecordingComm final : public Communicator {
 public:
  RecordingComm(DeviceId rank, int64_t size, std::vector<std::string>* calls) : rank_(rank), size_(size), calls_(calls) {}
  DeviceId rank() const override { return rank_; }
  int64_t world_size() const override { return size_; }
  std::string backend() const override { return "recording"; }
  void all_reduce(const Tensor&, const DeviceGroup&) override { calls_->push_back("all_reduce"); }
  void all_gather(const Tensor&, const Tensor&, const DeviceGroup&, std::span<const int64_t>) override {
    calls_->push_back("all_gather");
  }
  void reduce_scatter(const Tensor&, const Tensor&, const DeviceGroup&, std::span<const int64_t>) override {
    calls_->push_back("reduce_scatter");
  }
  void all_to_all(const Tensor&, const Tensor&, const DeviceGroup&, std::span<const int64_t>,
                  std::span<const int64_t>) override {
    calls_->push_back("all_to_all");
  }
  void broadcast(const Tensor&, DeviceId, const DeviceGroup&) override { calls_->push_back("broadcast"); }
  void send(const Tensor&, DeviceId) override { calls_->push_back("send"); }
  void recv(const Tensor&, DeviceId) override { calls_->push_back("recv"); }
  void batch_send_recv(std::span<const P2POp>) override { calls_->push_back("batch_send_recv"); }
  void barrier(const DeviceGroup&) override { calls_->push_back("barrier"); }

 private:
  DeviceId rank_;
  int64_t size_;
  std::vector<std::string>* calls_;
};

// A clock that only moves when the test computes (advance) or the decorator sleeps.
struct FakeTime {
  double now = 100.0;
  double overrun = 0;  // every sleep lasts this much longer than asked (a busy machine)
  std::vector<double> sleeps;
  EmulationClock clock() {
    return {[this] { return now; }, [this](double s) { sleeps.push_back(s); now += s + overrun; }};
  }
};

struct Fixture {
  std::vector<std::string> calls;
  FakeTime time;
  EmulatedCommunicator comm;
  Fixture(DeviceId rank, const EmulationSpec& spec)
      : comm(std::make_unique<RecordingComm>(rank, static_cast<int64_t>(spec.node_of_rank.size()), &calls), spec,
             time.clock()) {}
};

// Node 0 not emulated; node 1: 1 Gb/s, 100 us. Ranks 0, 1 on node 0; ranks 2, 3 on node 1.
EmulationSpec two_nodes(double slowdown) {
  return {slowdown, {0, 0, 1, 1}, {EmulatedLink{}, EmulatedLink{1.0, 100}}};
}

}  // namespace

TEST_CASE("emulated compute: sleeps (F - 1) x the time since the last communication", "[emulation]") {
  Fixture f(0, two_nodes(3.0));
  f.time.now += 0.010;                       // 10 ms of compute
  f.comm.barrier(DeviceGroup({0, 1}));       // one node: no link delay
  REQUIRE(f.time.sleeps.size() == 1);
  CHECK(f.time.sleeps[0] == Approx(0.020));
  CHECK(f.calls == std::vector<std::string>{"barrier"});
  // Time spent inside the communication and in the sleep is not compute.
  f.time.now += 0.001;
  f.comm.all_reduce(zeros({4}), DeviceGroup({0, 1}));
  REQUIRE(f.time.sleeps.size() == 2);
  CHECK(f.time.sleeps[1] == Approx(0.002));
  CHECK(f.comm.stats().compute_s == Approx(0.011));
  CHECK(f.comm.stats().slowdown_sleep_s == Approx(0.022));
  CHECK(f.comm.stats().link_sleep_s == 0);
}

TEST_CASE("emulated compute: with cpu_time, a wait for a core is not compute, and set_slowdown changes F", "[emulation]") {
  FakeTime time;
  double cpu = 0;  // this thread's CPU seconds: moves only while it computes
  EmulationClock clock = time.clock();
  clock.cpu_now = [&cpu] { return cpu; };
  std::vector<std::string> calls;
  EmulationSpec spec = two_nodes(3.0);
  spec.cpu_time = true;
  EmulatedCommunicator comm(std::make_unique<RecordingComm>(0, 4, &calls), spec, clock);
  time.now += 0.030;  // 30 ms of wall time, of which 10 ms computing (20 ms waiting for a core)
  cpu += 0.010;
  comm.barrier(DeviceGroup({0, 1}));
  REQUIRE(time.sleeps.size() == 1);
  CHECK(time.sleeps[0] == Approx(0.020));  // (3 - 1) x 10 ms, not x 30 ms
  CHECK(comm.emulated_compute_s() == Approx(0.030));  // 3 x 10 ms
  // A slowdown set between communications applies to the compute after it.
  time.now += 0.004, cpu += 0.004;
  comm.set_slowdown(5.0);
  time.now += 0.002, cpu += 0.002;
  CHECK(comm.emulated_compute_s() == Approx(0.030 + 3 * 0.004 + 5 * 0.002));  // the current stretch included
  comm.barrier(DeviceGroup({0, 1}));
  REQUIRE(time.sleeps.size() == 2);
  CHECK(time.sleeps[1] == Approx(2 * 0.004 + 4 * 0.002));
}

TEST_CASE("emulated compute: short debts wait until they add up to a sleep worth taking", "[emulation]") {
  Fixture f(0, two_nodes(2.0));
  f.time.now += 50e-6;
  f.comm.recv(zeros({1}), 1);
  CHECK(f.time.sleeps.empty());              // 50 us owed: below the minimum sleep
  f.time.now += 150e-6;
  f.comm.recv(zeros({1}), 1);
  REQUIRE(f.time.sleeps.size() == 1);
  CHECK(f.time.sleeps[0] == Approx(200e-6));  // both debts at once
}

TEST_CASE("emulated compute: a slowdown of 1 never sleeps", "[emulation]") {
  Fixture f(0, two_nodes(1.0));
  f.time.now += 1.0;
  f.comm.barrier(DeviceGroup({0, 1}));
  CHECK(f.time.sleeps.empty());
}

TEST_CASE("emulated link: a message to another node pays latency + bytes / bandwidth", "[emulation]") {
  Fixture f(0, two_nodes(1.0));
  f.comm.send(zeros({250000}), 2);           // 1e6 bytes from node 0 to node 1
  REQUIRE(f.time.sleeps.size() == 1);
  CHECK(f.time.sleeps[0] == Approx(100e-6 + 1e6 * 8 / 1e9));
  f.comm.send(zeros({250000}), 1);           // same node: free
  CHECK(f.time.sleeps.size() == 1);
  f.comm.recv(zeros({250000}), 2);           // the sender pays
  CHECK(f.time.sleeps.size() == 1);
  // A batch: each send to another node pays its own latency; receives pay nothing.
  std::vector<P2POp> ops = {P2POp::send(zeros({1000}), 2), P2POp::send(zeros({2000}), 3),
                            P2POp::send(zeros({5000}), 1), P2POp::recv(zeros({9000}), 3)};
  f.comm.batch_send_recv(ops);
  REQUIRE(f.time.sleeps.size() == 2);
  CHECK(f.time.sleeps[1] == Approx(2 * 100e-6 + 12000.0 * 8 / 1e9));
  CHECK(f.comm.stats().link_sleep_s == Approx(f.time.sleeps[0] + f.time.sleeps[1]));
}

TEST_CASE("emulated link: the slower side of two emulated nodes sets the delay", "[emulation]") {
  // Node 0: 10 Gb/s, 300 us; node 1: 2 Gb/s, 20 us -> 2 Gb/s and 300 us.
  EmulationSpec spec{1.0, {0, 1}, {EmulatedLink{10.0, 300}, EmulatedLink{2.0, 20}}};
  CHECK(link_delay_s(spec, 0, 1, 1e6) == Approx(300e-6 + 1e6 * 8 / 2e9));
  CHECK(link_delay_s(spec, 1, 0, 1e6) == Approx(300e-6 + 1e6 * 8 / 2e9));
  CHECK(link_delay_s(spec, 1, 1, 1e6) == 0);
  // Latency only (bandwidth not emulated on either side).
  EmulationSpec latency_only{1.0, {0, 1}, {EmulatedLink{0, 50}, EmulatedLink{}}};
  CHECK(link_delay_s(latency_only, 0, 1, 1e9) == Approx(50e-6));
}

TEST_CASE("emulated link: ring collectives pay every step at the slowest cross-node hop", "[emulation]") {
  Fixture f(0, two_nodes(1.0));
  // all_reduce of 4000 bytes over 4 members: 2(p-1) = 6 steps of 1000 bytes.
  f.comm.all_reduce(zeros({1000}), DeviceGroup({0, 1, 2, 3}));
  REQUIRE(f.time.sleeps.size() == 1);
  CHECK(f.time.sleeps[0] == Approx(6 * (100e-6 + 1000.0 * 8 / 1e9)));
  // all_gather into 8000 bytes over 4 members: p-1 = 3 steps of 2000 bytes.
  f.comm.all_gather(zeros({500}), zeros({2000}), DeviceGroup({0, 1, 2, 3}));
  REQUIRE(f.time.sleeps.size() == 2);
  CHECK(f.time.sleeps[1] == Approx(3 * (100e-6 + 2000.0 * 8 / 1e9)));
  // Uneven pieces: the largest one (3000 elements = 12000 bytes) sets each step.
  const std::vector<int64_t> counts = {3000, 1000};
  f.comm.reduce_scatter(zeros({4000}), zeros({3000}), DeviceGroup({0, 2}), counts);
  REQUIRE(f.time.sleeps.size() == 3);
  CHECK(f.time.sleeps[2] == Approx(1 * (100e-6 + 12000.0 * 8 / 1e9)));
  // Broadcast and barrier: ceil(log2 4) = 2 tree steps.
  f.comm.broadcast(zeros({250}), 0, DeviceGroup({0, 1, 2, 3}));
  REQUIRE(f.time.sleeps.size() == 4);
  CHECK(f.time.sleeps[3] == Approx(2 * (100e-6 + 1000.0 * 8 / 1e9)));
  f.comm.barrier(DeviceGroup({0, 1, 2, 3}));
  REQUIRE(f.time.sleeps.size() == 5);
  CHECK(f.time.sleeps[4] == Approx(2 * 100e-6));
  // A group within one node pays nothing.
  f.comm.all_reduce(zeros({1000}), DeviceGroup({0, 1}));
  CHECK(f.time.sleeps.size() == 5);
}

TEST_CASE("emulated link: all_to_all pays the larger of this rank's traffic out and in", "[emulation]") {
  Fixture f(0, two_nodes(1.0));
  // Group {0, 2}: rank 0 sends 100 elements to rank 2 and receives 300 from it.
  const std::vector<int64_t> send = {50, 100}, recv = {50, 300};
  f.comm.all_to_all(zeros({150}), zeros({350}), DeviceGroup({0, 2}), send, recv);
  REQUIRE(f.time.sleeps.size() == 1);
  CHECK(f.time.sleeps[0] == Approx(100e-6 + 1200.0 * 8 / 1e9));
}

TEST_CASE("emulated communicator: a spec that does not fit the world is refused", "[emulation]") {
  std::vector<std::string> calls;
  CHECK_THROWS_WITH(EmulatedCommunicator(std::make_unique<RecordingComm>(0, 3, &calls), two_nodes(1.0)),
                    Catch::Contains("4 node entries for 3 ranks"));
  CHECK_THROWS_WITH(EmulatedCommunicator(std::make_unique<RecordingComm>(0, 4, &calls), two_nodes(0.5)),
                    Catch::Contains("slowdown must be >= 1"));
}

TEST_CASE("emulated pacing: an overrun sleep is taken off the next ones", "[emulation]") {
  // Each sleep lasts 1 ms longer than asked. Three messages of 2 ms delay each ask 2, 1, 1 ms
  // (7 ms slept in all for 6 ms owed: never more than one overrun behind).
  Fixture f(0, two_nodes(1.0));
  f.time.overrun = 1e-3;
  const double delay = 100e-6 + 237500.0 * 8 / 1e9;  // 237,500 bytes at 1 Gb/s + 100 us = 2 ms
  for (int i = 0; i < 3; ++i) f.comm.send(zeros({59375}), 2);
  REQUIRE(f.time.sleeps.size() == 3);
  CHECK(f.time.sleeps[0] == Approx(delay));
  CHECK(f.time.sleeps[1] == Approx(delay - 1e-3));
  CHECK(f.time.sleeps[2] == Approx(delay - 1e-3));
  CHECK(f.comm.stats().link_sleep_s == Approx(3 * delay + 1e-3));
  // The slowdown too: 2x, 10 ms of compute between messages on one node.
  Fixture g(0, two_nodes(2.0));
  g.time.overrun = 1e-3;
  for (int i = 0; i < 3; ++i) {
    g.time.now += 0.010;
    g.comm.send(zeros({1}), 1);
  }
  REQUIRE(g.time.sleeps.size() == 3);
  CHECK(g.time.sleeps[1] == Approx(0.009));
  CHECK(g.comm.stats().slowdown_sleep_s == Approx(0.031));
}

TEST_CASE("emulated compute: settle_compute sleeps the slowdown now, however short, and not again", "[emulation]") {
  Fixture f(0, two_nodes(2.0));
  f.time.now += 50e-6;  // 50 us of compute: a message would wait for more (kMinSleep), settle does not
  f.comm.settle_compute();
  REQUIRE(f.time.sleeps.size() == 1);
  CHECK(f.time.sleeps[0] == Approx(50e-6));
  CHECK(f.calls.empty());
  // The compute clock restarted: a message right after owes nothing.
  f.comm.barrier(DeviceGroup({0, 1}));
  CHECK(f.time.sleeps.size() == 1);
  CHECK(f.comm.stats().slowdown_sleep_s == Approx(50e-6));
  CHECK(f.comm.stats().compute_s == Approx(50e-6));
}
