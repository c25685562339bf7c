// EmulatedCommunicator: a Communicator decorator that lets one machine rehearse a
// heterogeneous cluster. It makes this rank's compute slower by a factor and messages
// between ranks of different (emulated) nodes slower by a link's latency and bandwidth,
// by sleeping (which frees the core) just before each communication. Stats say how much of
// each it added. See Note [Emulated devices].
//
//   EmulationSpec spec{.slowdown = 2, .node_of_rank = {0, 1}, .links = {{}, {1.0, 50}}};
//   EmulatedCommunicator comm(make_mpi_communicator(), spec);
//   comm.send(t, 1);   // sleeps (2-1) x the compute since the last call, then 50 us + bytes / 1 Gb/s
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "lib/hspmd/communicator.h"

namespace hetu {

// A node's emulated network link; 0 = not emulated (infinitely fast from this side).
struct EmulatedLink {
  double gbps = 0;
  double latency_us = 0;
};

struct EmulationSpec {
  double slowdown = 1;                  // this rank's compute factor, >= 1
  std::vector<int64_t> node_of_rank;    // per world rank: index into links
  std::vector<EmulatedLink> links;      // per node
  bool cpu_time = false;                // compute is CPU time between communications (else wall time)
};

// Wall clock and sleep, injectable so tests can check the delays exactly.
struct EmulationClock {
  std::function<double()> now;               // seconds, monotonic
  std::function<void(double seconds)> sleep;
  std::function<double()> cpu_now = {};      // the calling thread's CPU seconds (empty: `now`)
  static EmulationClock real();
};

struct EmulationStats {
  double compute_s = 0;        // time between communications (this rank's compute; CPU time with cpu_time)
  double slowdown_sleep_s = 0; // slept for the slowdown
  double link_sleep_s = 0;     // slept for emulated links
};

// The link between two emulated nodes: the larger latency and the smaller bandwidth (a side
// that does not emulate bandwidth does not limit it; 0: neither does).
EmulatedLink slower_link(const EmulatedLink& a, const EmulatedLink& b);

// The delay, in seconds, of one message of `bytes` between nodes a and b (0 on one node):
// the larger latency plus bytes over the smaller bandwidth of the two nodes' links.
double link_delay_s(const EmulationSpec& spec, int64_t node_a, int64_t node_b, double bytes);

class EmulatedCommunicator final : public Communicator {
 public:
  EmulatedCommunicator(std::unique_ptr<Communicator> inner, EmulationSpec spec,
                       EmulationClock clock = EmulationClock::real());

  DeviceId rank() const override { return inner_->rank(); }
  int64_t world_size() const override { return inner_->world_size(); }
  std::string backend() const override { return inner_->backend() + " (emulated)"; }
  Device device() const override { return inner_->device(); }

  void all_reduce(const Tensor& buffer, const DeviceGroup& group) override;
  void all_gather(const Tensor& in, const Tensor& out, const DeviceGroup& group,
                  std::span<const int64_t> counts = {}) override;
  void reduce_scatter(const Tensor& in, const Tensor& out, const DeviceGroup& group,
                      std::span<const int64_t> counts = {}) override;
  void all_to_all(const Tensor& in, const Tensor& out, const DeviceGroup& group,
                  std::span<const int64_t> send_counts = {}, std::span<const int64_t> recv_counts = {}) override;
  void broadcast(const Tensor& buffer, DeviceId root, const DeviceGroup& group) override;
  void send(const Tensor& tensor, DeviceId peer) override;
  void recv(const Tensor& tensor, DeviceId peer) override;
  void batch_send_recv(std::span<const P2POp> ops) override;
  void barrier(const DeviceGroup& group) override;

  const EmulationStats& stats() const { return stats_; }
  // From now on this rank computes `slowdown` (>= 1) times slower (a rehearsed device that
  // slows down or recovers during a run); compute before the call keeps the old factor.
  void set_slowdown(double slowdown);
  double slowdown() const { return spec_.slowdown; }
  // The emulated device's compute so far: the CPU time of every stretch between
  // communications (the current one included) times the slowdown in effect while it ran.
  double emulated_compute_s() const;

  // Sleeps now the slowdown owed for the compute since the last communication (however
  // short) and restarts the compute clock, so that a caller timing pieces of compute (hetu
  // profile, per layer) pays each piece's sleep right after it, not in the next message.
  void settle_compute();

 private:
  // Pays the slowdown for the compute since the last call, then `link_s` of network delay,
  // runs `op`, and restarts the compute clock.
  void communicate(double link_s, const std::function<void()>& op);
  // Adds the compute since the last return to what is owed and sleeps it when >= min_sleep_s.
  void pay_slowdown(double min_sleep_s);
  // Ring collectives: `steps` hops of `step_bytes` each over the group's slowest cross-node hop.
  double ring_delay_s(const DeviceGroup& group, int64_t steps, double step_bytes) const;
  double p2p_delay_s(DeviceId peer, double bytes) const;

  std::unique_ptr<Communicator> inner_;
  EmulationSpec spec_;
  EmulationClock clock_;
  double owed_s_ = 0;  // slowdown not yet slept (sleeps shorter than kMinSleep wait for more)
  double link_owed_s_ = 0;  // link delay not yet slept (< 0: an overrun sleep, taken off the next)
  // Counts the compute since the last communication returned at the current factor.
  void count_compute();
  void restart_compute();
  double last_return_ = 0;
  double cpu_last_return_ = 0;
  double emulated_compute_s_ = 0;  // every stretch counted so far times the slowdown then
  EmulationStats stats_;
};

}  // namespace hetu
