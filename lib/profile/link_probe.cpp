// Link bandwidth and latency from timed messages. See Note [Link probes].
#include "lib/profile/link_probe.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "lib/core/cuda_runtime.h"
#include "lib/ops/ops.h"

namespace hetu::profile {
namespace {

// Note [Link probes]: a message of n bytes is taken to cost latency + n / bandwidth. p2p: two
// ranks exchange a message each way at once (full duplex, one message's time), at kSmall
// and kLarge bytes; latency is
// the small message's time, bandwidth (kLarge - kSmall) over the difference. all_reduce: the
// ring model the cost model prices it by (ring_all_reduce_s: 2(p-1) steps of n/p bytes), so
// the fitted numbers are per ring step and plug into it directly. Each size takes the mean of
// kSmallRuns or kRuns after a warm-up, not the fastest: an emulated link pays a late wake-up
// back from its next sleeps (Note [Emulated devices]), so after one run overslept by more
// than the latency the next runs sleep nothing, and the fastest run is one that paid no
// latency at all (2 us measured for an emulated 200 us on a busy machine). Over the runs the
// credit cancels (the warm-up absorbs what the previous probe left), so their mean is the
// link's cost, high by at most the last run's oversleep / runs. Between nodes, every pair is
// probed up to kAllPairsNodes nodes, and beyond that consecutive nodes only (node i with
// i+1), to keep the probe linear.
constexpr int64_t kSmall = 8;
constexpr int64_t kLarge = 4 << 20;
constexpr int kRuns = 4;        // at kLarge
constexpr int kSmallRuns = 12;  // at kSmall (cheap; latency is the noisier number)
constexpr size_t kAllPairsNodes = 8;

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double mean(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// The rank of every device of a node, in device order.
std::vector<DeviceId> node_ranks(const config::NodeSection& node, const launch::RankMap& ranks) {
  std::vector<DeviceId> out;
  for (int64_t i = 0; i < node.count; ++i) out.push_back(ranks.rank_of_device.at({node.host, i}));
  return out;
}

struct Fit {
  double small_s = 0, large_s = 0;  // seconds per message (p2p) or per ring step (all_reduce)
};

// On every rank: the fit as measured where it was (the other ranks add zeros).
LinkProfile shared_fit(Communicator& host, Fit fit, bool measured_here, LinkProfile link) {
  Tensor t = measured_here ? tensor_from(std::vector<double>{fit.small_s, fit.large_s}, {2}) : zeros({2}, DType::f64);
  host.all_reduce(t, host.world());
  const std::vector<double> v = to_vector(t);
  const double extra = std::max(v[1] - v[0], 1e-12);
  link.latency_us = 1e6 * v[0];
  link.gbps = (kLarge - kSmall) * 8 / extra / 1e9;
  return link;
}

Tensor message(int64_t bytes, Device device) { return full({bytes / 4}, 1.0, DType::f32).to(device); }

void sync(Device device) {
  if (device.is_cuda()) cuda::synchronize(device.index);
}

// The mean exchange of a message each way between a and b (batch_send_recv): both ranks
// enter it together, as in a pipeline's send/recv pairs, so neither waits in a receive while
// the other is still on its way (a rank waiting in MPI on a busy machine yields its core and
// may see the message a scheduler tick late).
double exchange(Communicator& comm, DeviceId a, DeviceId b, int64_t bytes, Device device) {
  const int runs = bytes <= kSmall * 64 ? kSmallRuns : kRuns;
  Tensor out = message(bytes, device), in = message(bytes, device);
  const DeviceId peer = comm.rank() == a ? b : a;
  const std::vector<P2POp> ops = {P2POp::send(out, peer), P2POp::recv(in, peer)};
  std::vector<double> times;
  for (int run = 0; run <= runs; ++run) {
    const double start = now_s();
    comm.batch_send_recv(ops);
    sync(device);
    if (run > 0) times.push_back(now_s() - start);
  }
  return mean(times);
}

double ring_step(Communicator& comm, const DeviceGroup& group, int64_t bytes, Device device) {
  const int runs = bytes <= kSmall * 64 ? kSmallRuns : kRuns;
  Tensor buffer = message(bytes, device);
  std::vector<double> times;
  for (int run = 0; run <= runs; ++run) {
    const double start = now_s();
    comm.all_reduce(buffer, group);
    sync(device);
    if (run > 0) times.push_back(now_s() - start);
  }
  return mean(times) / (2.0 * static_cast<double>(group.size() - 1));
}

LinkProfile probe_p2p(Communicator& comm, Communicator& host, DeviceId a, DeviceId b, Device device, LinkProfile link) {
  host.barrier(host.world());
  Fit fit;
  const bool member = comm.rank() == a || comm.rank() == b;
  if (member) {
    fit.small_s = exchange(comm, a, b, kSmall, device);
    fit.large_s = exchange(comm, a, b, kLarge, device);
  }
  link.ranks = 2;
  return shared_fit(host, fit, comm.rank() == a, std::move(link));
}

LinkProfile probe_all_reduce(Communicator& comm, Communicator& host, const std::vector<DeviceId>& members, Device device,
                             LinkProfile link) {
  host.barrier(host.world());
  const DeviceGroup group(members);
  Fit fit;
  if (group.contains(comm.rank())) {
    // Per ring step of n/p bytes: the fit's sizes are those of one step.
    fit.small_s = ring_step(comm, group, kSmall * group.size(), device);
    fit.large_s = ring_step(comm, group, kLarge * group.size(), device);
  }
  link.kind = "all_reduce";
  link.ranks = group.size();
  return shared_fit(host, fit, comm.rank() == members[0], std::move(link));
}

// A link to be measured between `hosts`.
LinkProfile link_between_hosts(std::string kind, std::string scope, std::vector<std::string> hosts) {
  LinkProfile l;
  l.kind = std::move(kind);
  l.scope = std::move(scope);
  l.hosts = std::move(hosts);
  return l;
}

}  // namespace

std::vector<LinkProfile> probe_links(const config::JobConfig& c, const launch::RankMap& ranks, Communicator& comm,
                                     Communicator& host, Device device) {
  std::vector<LinkProfile> out;
  const std::vector<config::NodeSection>& nodes = c.cluster.nodes;
  for (const config::NodeSection& node : nodes) {
    if (node.count < 2) continue;
    const std::vector<DeviceId> members = node_ranks(node, ranks);
    out.push_back(probe_p2p(comm, host, members[0], members[1], device, link_between_hosts("p2p", "within", {node.host})));
    out.push_back(probe_all_reduce(comm, host, members, device, link_between_hosts("all_reduce", "within", {node.host})));
  }
  for (size_t a = 0; a < nodes.size(); ++a) {
    for (size_t b = a + 1; b < nodes.size(); ++b) {
      if (nodes.size() > kAllPairsNodes && b != a + 1) continue;
      out.push_back(probe_p2p(comm, host, node_ranks(nodes[a], ranks)[0], node_ranks(nodes[b], ranks)[0], device,
                              link_between_hosts("p2p", "between", {nodes[a].host, nodes[b].host})));
    }
  }
  if (nodes.size() >= 2) {
    std::vector<DeviceId> firsts;
    std::vector<std::string> hosts;
    for (const config::NodeSection& node : nodes) firsts.push_back(node_ranks(node, ranks)[0]), hosts.push_back(node.host);
    out.push_back(probe_all_reduce(comm, host, firsts, device, link_between_hosts("all_reduce", "between", hosts)));
  }
  host.barrier(host.world());
  return out;
}

}  // namespace hetu::profile
