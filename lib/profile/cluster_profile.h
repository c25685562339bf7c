// The profile of a job's cluster (profile_file.h), measured two ways:
// - profile_cluster: under mpirun with one rank per device of the cluster (like hetu train;
//   `[cluster] rehearse` maps ranks to devices), every rank measuring at once on its own
//   device (so contention is what training sees), its emulation applied (the slowdown slept
//   inside each timed piece, emulated links in the link probes). Per device type, tp degree
//   (1 and every size up to a node's device count the model splits into) and micro-batch
//   size (profile_micro_batches): the pieces of profile_measure.h and the AdamW step (the
//   degrees in turns, in rounds: Note [Profile windows], interleaving), averaged over the
//   ranks of the type; then the links (link_probe.h). Collective: every rank calls
//   it and gets the same Profile.
// - profile_one_process: the single-process mode (hetu profile and hetu plan without
//   mpirun): this CPU measured once at tp 1, and every CPU type of the cluster given those
//   times x its emulate_slowdown; GPU types and links are left to the catalogue.
//
//   Profile p = profile_launched(loaded, ranks, mpi.world_size());   // on every rank
#pragma once

#include <string>
#include <vector>

#include "lib/config/config.h"
#include "lib/hspmd/communicator.h"
#include "lib/launch/rank_map.h"
#include "lib/profile/profile_file.h"

namespace hetu::profile {

// The micro-batch sizes profiled: the powers of two below training.micro_batch, and it.
std::vector<int64_t> profile_micro_batches(const config::JobConfig& c);

Profile profile_cluster(const config::LoadedConfig& loaded, const launch::RankMap& ranks, Communicator& comm,
                        Communicator& host, Device compute);

// profile_cluster over this process's own communicators, as hetu train makes them: MPI (a
// local one in a world of one) with the job's emulation, NCCL for a GPU's tensors; the CPU
// allocator capped at the device's memory_gib. Collective over the `world_size` ranks.
Profile profile_launched(const config::LoadedConfig& loaded, const launch::RankMap& ranks, int64_t world_size);

Profile profile_one_process(const config::LoadedConfig& loaded);

// One line per measured entry and link, for the console, and a warning when the entries' windows
// disagreed by more than 5% (PieceTimes::spread).
std::vector<std::string> describe_profile(const Profile& profile);

}  // namespace hetu::profile
