// Which device of the job file each launched rank drives. A rank's device is found by its
// host name and its local index (its position among the ranks on the same host, in rank
// order): device "gpu-b:3" is the fourth rank started on host gpu-b. `host = "localhost"`
// is the machine the ranks run on (valid when they all run on one machine), so
// single-machine jobs (`mpirun -np 4 hetu train ...`) work anywhere. Host names compare on
// their first label, so Slurm's short node names match fully qualified ones. With
// `[cluster] rehearse = true`, rank r drives the r-th device of the cluster in node order
// whatever machine it runs on, so made-up hosts rehearse a multi-node cluster on one machine.
//
// The devices are those any strategy's groups name ([parallel] and every
// [[parallel.strategy]]: JobConfig::strategy_devices), so a rank idle under one strategy
// still has its device. Every mismatch is a UsageError before compute: a device of the
// groups with no rank, a rank with no device, ranks on a host the cluster does not list.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lib/config/job_config.h"
#include "lib/pipeline/parallel_layout.h"

namespace hetu::launch {

struct RankMap {
  std::vector<config::DeviceId> device_of_rank;     // indexed by world rank
  std::map<config::DeviceId, int> rank_of_device;
};

// rank_hosts[r]: the host name rank r runs on (MPI_Get_processor_name), for every rank.
RankMap map_ranks(const config::JobConfig& config, const std::vector<std::string>& rank_hosts);

// The job's [parallel] groups in world ranks: replicas with their batch shares (in order,
// tiling the global batch), stages with their layers and tp groups, schedules.
pipeline::ParallelLayout parallel_layout(const config::JobConfig& config, const RankMap& ranks);
// The same for one of the job's strategies (a [[parallel.strategy]] layout, or [parallel]).
pipeline::ParallelLayout parallel_layout(const config::JobConfig& config, const config::ParallelSection& parallel,
                                         const RankMap& ranks);

}  // namespace hetu::launch
