// Rank -> device by host name and local index.
#include "lib/launch/rank_map.h"

#include <fmt/ranges.h>

#include <set>

#include "lib/util/error.h"

namespace hetu::launch {
namespace {

std::string short_name(const std::string& host) { return host.substr(0, host.find('.')); }

// Where each rank runs: (machine, local index) -> rank, the machine each node's host names,
// and how many ranks run on each machine.
struct Placement {
  std::map<std::pair<std::string, int64_t>, int> rank_at;
  std::map<std::string, std::string> machine_of_node;
  std::map<std::string, int64_t> count_on;
};

// Rank r is the i-th rank (in rank order) on the machine it runs on.
Placement machine_placement(const config::JobConfig& c, const std::vector<std::string>& rank_hosts) {
  Placement p;
  std::set<std::string> machines;
  for (const std::string& h : rank_hosts) machines.insert(short_name(h));
  for (const config::NodeSection& node : c.cluster.nodes) {
    if (node.host == "localhost") {
      if (machines.size() > 1) {
        HT_USAGE_ERROR("[[cluster.node]] host \"localhost\" is ambiguous: the ranks run on {} hosts ({}); name the "
                       "hosts in the job file", machines.size(), fmt::format("{}", fmt::join(machines, ", ")));
      }
      p.machine_of_node[node.host] = *machines.begin();
    } else {
      p.machine_of_node[node.host] = short_name(node.host);
    }
  }
  for (size_t r = 0; r < rank_hosts.size(); ++r) {
    const std::string machine = short_name(rank_hosts[r]);
    p.rank_at[{machine, p.count_on[machine]++}] = static_cast<int>(r);
  }
  return p;
}

// [cluster] rehearse: rank r drives the r-th device of the cluster in node order, wherever
// it runs (the node's host stands for itself).
Placement rehearsal_placement(const config::JobConfig& c, size_t num_ranks) {
  Placement p;
  size_t r = 0;
  for (const config::NodeSection& node : c.cluster.nodes) {
    p.machine_of_node[node.host] = node.host;
    for (int64_t i = 0; i < node.count && r < num_ranks; ++i, ++r) {
      p.rank_at[{node.host, i}] = static_cast<int>(r);
      ++p.count_on[node.host];
    }
  }
  return p;
}

}  // namespace

RankMap map_ranks(const config::JobConfig& c, const std::vector<std::string>& rank_hosts) {
  const Placement placement =
      c.cluster.rehearse ? rehearsal_placement(c, rank_hosts.size()) : machine_placement(c, rank_hosts);
  RankMap map;
  map.device_of_rank.resize(rank_hosts.size());
  std::vector<bool> used(rank_hosts.size(), false);
  for (const config::DeviceId& device : c.strategy_devices()) {
    const std::string& machine = placement.machine_of_node.at(device.host);
    auto it = placement.rank_at.find({machine, device.index});
    if (it == placement.rank_at.end()) {
      const auto count = placement.count_on.find(machine);
      HT_USAGE_ERROR("device {} of the [parallel] groups has no rank: {} rank(s) {} {}; start one rank per "
                     "device{}", device.str(), count == placement.count_on.end() ? 0 : count->second,
                     c.cluster.rehearse ? "drive the devices of node" : "were launched on host", machine,
                     c.cluster.rehearse ? " of the cluster (cluster.rehearse: rank r drives its r-th device)"
                                        : " on each host (mpirun/srun), local index = device index");
    }
    map.device_of_rank[static_cast<size_t>(it->second)] = device;
    map.rank_of_device[device] = it->second;
    used[static_cast<size_t>(it->second)] = true;
  }
  for (size_t r = 0; r < used.size(); ++r) {
    if (!used[r]) {
      HT_USAGE_ERROR("rank {} on host {} drives no device of the [parallel] groups; launch exactly the devices the job "
                     "names", r, rank_hosts[r]);
    }
  }
  return map;
}

pipeline::ParallelLayout parallel_layout(const config::JobConfig& c, const RankMap& ranks) {
  return parallel_layout(c, c.parallel, ranks);
}

pipeline::ParallelLayout parallel_layout(const config::JobConfig& c, const config::ParallelSection& parallel,
                                         const RankMap& ranks) {
  pipeline::ParallelLayout layout;
  layout.global_batch = c.training.global_batch;
  layout.zero = parallel.zero;
  int64_t offset = 0;
  for (size_t r = 0; r < parallel.replicas.size(); ++r) {
    const config::ReplicaSection& section = parallel.replicas[r];
    pipeline::ReplicaLayout replica;
    replica.batch_offset = offset;
    replica.batch = parallel.replica_batch(r, c.training.global_batch);
    replica.micro_batch = section.micro_batch;
    replica.schedule = section.schedule == config::PipelineSchedule::gpipe ? pipeline::ScheduleKind::gpipe
                                                                           : pipeline::ScheduleKind::one_f_one_b;
    offset += replica.batch;
    for (const config::StageSection& stage : section.stages) {
      std::vector<DeviceId> devices;
      for (const config::DeviceId& d : stage.devices) devices.push_back(ranks.rank_of_device.at(d));
      replica.stages.push_back({DeviceGroup(std::move(devices)), stage.layers.first, stage.layers.last, stage.recompute});
    }
    layout.replicas.push_back(std::move(replica));
  }
  layout.validate();
  return layout;
}

}  // namespace hetu::launch
