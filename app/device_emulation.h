// Device emulation for `hetu train` (Note [Emulated devices] in lib/hspmd/emulated_comm.cpp):
// from the job's catalogue and nodes, the lines that say at launch what is emulated, the CPU
// memory cap of a rank's device (its type's memory_gib), and the communicator decorator that
// slows a rank's compute (emulate_slowdown) and its messages to other nodes
// (emulate_link_gbps / emulate_link_latency_us).
//
//   limit_cpu_memory(loaded, device);                          // memory_gib of a CPU type
//   auto comm = with_emulation(make_mpi_communicator(), loaded, ranks);
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "app/config/config.h"
#include "app/rank_map.h"
#include "lib/hspmd/communicator.h"

namespace hetu::app {

// One line per emulated fact (rehearsal, slow device types, capped memory, slow links); empty
// when nothing is emulated.
std::vector<std::string> describe_emulation(const config::LoadedConfig& loaded);

// Caps the CPU allocator at the memory_gib of `device`'s type when it is a CPU type with one.
void limit_cpu_memory(const config::LoadedConfig& loaded, const config::DeviceId& device);

// `comm` wrapped in an EmulatedCommunicator when this rank's device is slowed or any node's
// link is emulated; `comm` itself otherwise.
std::unique_ptr<Communicator> with_emulation(std::unique_ptr<Communicator> comm, const config::LoadedConfig& loaded,
                                             const RankMap& ranks);

// Sleeps now the slowdown owed for this rank's compute since its last message (a no-op for
// a communicator that does not emulate): hetu profile calls it at the end of each timed piece.
void settle_emulated_compute(Communicator& comm);

// What the emulation added on this rank ("" for a communicator that does not emulate).
std::string emulation_report(const Communicator& comm);

}  // namespace hetu::app
