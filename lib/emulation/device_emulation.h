// Device emulation for `hetu train` (Note [Emulated devices] in lib/hspmd/emulated_comm.cpp):
// from the job's catalogue and nodes, the lines that say at launch what is emulated, the CPU
// memory cap of a rank's device (its type's memory_gib), and the communicator decorator that
// slows a rank's compute (emulate_slowdown) and its messages to other nodes
// (emulate_link_gbps / emulate_link_latency_us); a type's emulate_slowdown_schedule changes
// the slowdown at the steps it names (slowdown_schedule).
//
//   limit_cpu_memory(loaded, device);                          // memory_gib of a CPU type
//   auto comm = with_emulation(make_mpi_communicator(), loaded, ranks);
//   options.before_step = slowdown_schedule(*comm, loaded, device);   // empty without a schedule
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/config/config.h"
#include "lib/hspmd/communicator.h"
#include "lib/launch/rank_map.h"

namespace hetu::emulation {

// One line per emulated fact (rehearsal, slow device types, capped memory, slow links); empty
// when nothing is emulated.
std::vector<std::string> describe_emulation(const config::LoadedConfig& loaded);

// Caps the CPU allocator at the memory_gib of `device`'s type when it is a CPU type with one.
void limit_cpu_memory(const config::LoadedConfig& loaded, const config::DeviceId& device);

// `comm` wrapped in an EmulatedCommunicator when this rank's device is slowed (now or by its
// schedule), any node's link is emulated, or `measure_compute` asks for its compute clock
// (emulated_compute_s, [straggler]: then the slowdown is paced by CPU time, so that ranks
// sharing cores are not slowed by each other's waits; Note [Emulated devices]; also where the
// device type sets emulate_cpu_time); `comm`
// itself otherwise.
std::unique_ptr<Communicator> with_emulation(std::unique_ptr<Communicator> comm, const config::LoadedConfig& loaded,
                                             const launch::RankMap& ranks, bool measure_compute = false);

// The slowdown of `type` during step `step` (1-based): its schedule's last entry at or
// before the step, else emulate_slowdown.
double slowdown_at(const config::DeviceProfile& type, int64_t step);

// Sets `comm`'s slowdown for each step from the schedule of `device`'s type (call before
// the step with its number); empty when the type has no schedule or `comm` does not emulate.
std::function<void(int64_t step)> slowdown_schedule(Communicator& comm, const config::LoadedConfig& loaded,
                                                    const config::DeviceId& device);

// This rank's compute seconds so far as an emulating communicator sees them: the time
// between its communications times the slowdown (none for other communicators).
std::optional<double> emulated_compute_s(const Communicator& comm);

// The factor `comm` slows this rank's compute by now (1 for a communicator that does not emulate).
double emulated_slowdown(const Communicator& comm);

// Sleeps now the slowdown owed for this rank's compute since its last message (a no-op for
// a communicator that does not emulate): hetu profile calls it after each timed piece.
void settle_emulated_compute(Communicator& comm);
// Seconds `comm` has slept for its slowdown so far (0 when it is not emulated).
double emulated_slowdown_sleep_s(const Communicator& comm);

// What the emulation added on this rank ("" for a communicator that does not emulate).
std::string emulation_report(const Communicator& comm);

}  // namespace hetu::emulation
