// Emulated devices and links from the job file, for hetu train and hetu profile.
#include "lib/emulation/device_emulation.h"

#include <fmt/core.h>

#include "lib/config/compute_device.h"
#include "lib/core/storage.h"
#include "lib/hspmd/emulated_comm.h"
#include "lib/util/error.h"

namespace hetu::emulation {
namespace {

const config::NodeSection& node_of(const config::JobConfig& c, const config::DeviceId& device) {
  for (const config::NodeSection& node : c.cluster.nodes) {
    if (node.host == device.host) return node;
  }
  HT_THROW("device {}: host {} is not a [[cluster.node]]", device.str(), device.host);
}

double slowdown_of(const config::LoadedConfig& loaded, const config::DeviceId& device) {
  const config::DeviceProfile* type = config::device_profile(loaded, device);
  return type != nullptr ? type->emulate_slowdown : 1.0;
}

bool any_link_emulated(const config::JobConfig& c) {
  for (const config::NodeSection& node : c.cluster.nodes) {
    if (node.emulate_link_gbps > 0 || node.emulate_link_latency_us > 0) return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> describe_emulation(const config::LoadedConfig& loaded) {
  const config::JobConfig& c = loaded.config;
  std::vector<std::string> lines;
  if (c.cluster.rehearse) {
    lines.push_back("rehearsal (cluster.rehearse): rank r drives the r-th device of the cluster in node order, "
                    "whatever machine it runs on");
  }
  for (const config::NodeSection& node : c.cluster.nodes) {
    const config::DeviceProfile* type = loaded.catalog.find(node.device_type);
    if (type != nullptr && type->emulate_slowdown > 1) {
      lines.push_back(fmt::format("emulated: node {} ({}x {}) computes {}x slower (emulate_slowdown)", node.host,
                                  node.count, type->name, type->emulate_slowdown));
    }
    if (type != nullptr && !type->emulate_slowdown_schedule.empty()) {
      std::string steps;
      for (const auto& [step, factor] : type->emulate_slowdown_schedule)
        steps += fmt::format("{}{}x from step {}", steps.empty() ? "" : ", ", factor, step);
      lines.push_back(fmt::format("emulated: node {} ({}x {}) computes {} (emulate_slowdown_schedule)", node.host,
                                  node.count, type->name, steps));
    }
    if (type != nullptr && type->kind == config::DeviceKind::cpu && type->memory_gib > 0) {
      lines.push_back(fmt::format("emulated: node {} ({}) has {} GiB of tensor memory per device (memory_gib)",
                                  node.host, type->name, type->memory_gib));
    }
    if (node.emulate_link_gbps > 0 || node.emulate_link_latency_us > 0) {
      lines.push_back(fmt::format("emulated: node {} link to other nodes: {} Gb/s, {} us latency", node.host,
                                  node.emulate_link_gbps > 0 ? fmt::format("{}", node.emulate_link_gbps) : "unlimited",
                                  node.emulate_link_latency_us));
    }
  }
  return lines;
}

void limit_cpu_memory(const config::LoadedConfig& loaded, const config::DeviceId& device) {
  const config::DeviceProfile* type = config::device_profile(loaded, device);
  if (type == nullptr || type->kind != config::DeviceKind::cpu || type->memory_gib <= 0) return;
  set_cpu_memory_limit(static_cast<size_t>(type->memory_gib * double(1 << 30)),
                       fmt::format("device {} ({}, memory_gib = {})", device.str(), type->name, type->memory_gib));
}

std::unique_ptr<Communicator> with_emulation(std::unique_ptr<Communicator> comm, const config::LoadedConfig& loaded,
                                             const launch::RankMap& ranks, bool measure_compute) {
  const config::JobConfig& c = loaded.config;
  const config::DeviceId& mine = ranks.device_of_rank.at(static_cast<size_t>(comm->rank()));
  EmulationSpec spec;
  spec.slowdown = slowdown_of(loaded, mine);
  const config::DeviceProfile* type = config::device_profile(loaded, mine);
  const bool scheduled = type != nullptr && !type->emulate_slowdown_schedule.empty();
  if (spec.slowdown <= 1 && !scheduled && !measure_compute && !any_link_emulated(c)) return comm;
  spec.cpu_time = measure_compute || (type != nullptr && type->emulate_cpu_time);  // see Note [Emulated devices]
  for (const config::NodeSection& node : c.cluster.nodes) {
    spec.links.push_back({node.emulate_link_gbps, node.emulate_link_latency_us});
  }
  for (const config::DeviceId& device : ranks.device_of_rank) {
    const config::NodeSection& node = node_of(c, device);
    spec.node_of_rank.push_back(&node - c.cluster.nodes.data());
  }
  return std::make_unique<EmulatedCommunicator>(std::move(comm), std::move(spec));
}

double slowdown_at(const config::DeviceProfile& type, int64_t step) {
  double factor = type.emulate_slowdown;
  for (const auto& [from, f] : type.emulate_slowdown_schedule)
    if (from <= step) factor = f;
  return factor;
}

std::function<void(int64_t step)> slowdown_schedule(Communicator& comm, const config::LoadedConfig& loaded,
                                                    const config::DeviceId& device) {
  const config::DeviceProfile* type = config::device_profile(loaded, device);
  auto* emulated = dynamic_cast<EmulatedCommunicator*>(&comm);
  if (type == nullptr || type->emulate_slowdown_schedule.empty() || emulated == nullptr) return {};
  return [emulated, type = *type, current = 0.0](int64_t step) mutable {
    const double factor = slowdown_at(type, step);
    if (factor == current) return;
    emulated->set_slowdown(factor);
    current = factor;
  };
}

std::optional<double> emulated_compute_s(const Communicator& comm) {
  const auto* emulated = dynamic_cast<const EmulatedCommunicator*>(&comm);
  if (emulated == nullptr) return std::nullopt;
  return emulated->emulated_compute_s();
}

double emulated_slowdown(const Communicator& comm) {
  const auto* emulated = dynamic_cast<const EmulatedCommunicator*>(&comm);
  return emulated != nullptr ? emulated->slowdown() : 1.0;
}

void settle_emulated_compute(Communicator& comm) {
  if (auto* emulated = dynamic_cast<EmulatedCommunicator*>(&comm)) emulated->settle_compute();
}

double emulated_slowdown_sleep_s(const Communicator& comm) {
  const auto* emulated = dynamic_cast<const EmulatedCommunicator*>(&comm);
  return emulated != nullptr ? emulated->stats().slowdown_sleep_s : 0.0;
}

std::string emulation_report(const Communicator& comm) {
  const auto* emulated = dynamic_cast<const EmulatedCommunicator*>(&comm);
  if (emulated == nullptr) return "";
  const EmulationStats& s = emulated->stats();
  return fmt::format("emulation on this rank: {:.3f} s of compute measured, {:.3f} s slept for the slowdown, "
                     "{:.3f} s for emulated links", s.compute_s, s.slowdown_sleep_s, s.link_sleep_s);
}

}  // namespace hetu::emulation
