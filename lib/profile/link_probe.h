// `hetu profile`'s link measurements, on every rank of the job's cluster at once (each call
// is collective over the world: every rank calls it, non-members of a measured pair or group
// wait at the barrier that follows it). Through the rank's communicator, so emulated links
// (EmulatedCommunicator) are what is measured. Each link is fitted as latency + bytes /
// bandwidth from a small and a large message (Note [Link probes] in link_probe.cpp):
//   p2p within a node (its first two ranks) and between each pair of nodes (their first ranks);
//   all_reduce within a node (all its ranks) and between nodes (the first rank of each).
//
//   std::vector<LinkProfile> links = probe_links(config, ranks, comm, comm, Device::cpu());
#pragma once

#include <vector>

#include "lib/config/config.h"
#include "lib/hspmd/communicator.h"
#include "lib/launch/rank_map.h"
#include "lib/profile/profile_file.h"

namespace hetu::profile {

// The same list on every rank.
// `comm` moves the probe messages (NCCL on GPUs); `host` (MPI) shares the results.
std::vector<LinkProfile> probe_links(const config::JobConfig& c, const launch::RankMap& ranks, Communicator& comm,
                                     Communicator& host, Device device);

}  // namespace hetu::profile
