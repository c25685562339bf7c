// The job's layout priced from the catalogue. See Note [Catalogue estimates] in lib/plan.
#include "app/layout_cost.h"

#include <optional>
#include <set>

#include "app/config/device_spec.h"
#include "lib/hspmd/emulated_comm.h"
#include "lib/plan/stage_estimate.h"
#include "lib/util/error.h"
#include "models/model_costs.h"

namespace hetu::app {
namespace {

// Assumed links where the job says nothing: GPUs over NVLink within a node and 200 Gb/s
// between nodes; CPU ranks over shared memory within a node and 10 Gb/s Ethernet between.
plan::Link assumed_link(bool gpu, bool same_node) {
  if (gpu) return same_node ? plan::Link{150e9, 5e-6} : plan::Link{25e9, 10e-6};
  return same_node ? plan::Link{10e9, 2e-6} : plan::Link{1.25e9, 50e-6};
}

const config::NodeSection& node_of(const config::JobConfig& c, const std::string& host) {
  for (const config::NodeSection& node : c.cluster.nodes) {
    if (node.host == host) return node;
  }
  HT_THROW("host {} is not a [[cluster.node]]", host);
}

// The link between devices of nodes a and b: the emulated one when either node emulates
// (the slower side, as the emulation does: slower_link), else the assumption.
plan::Link link_between(const config::JobConfig& c, const std::string& a, const std::string& b, bool gpu) {
  const config::NodeSection& na = node_of(c, a);
  const config::NodeSection& nb = node_of(c, b);
  const bool emulated = na.emulate_link_gbps > 0 || nb.emulate_link_gbps > 0 || na.emulate_link_latency_us > 0 ||
                        nb.emulate_link_latency_us > 0;
  if (a == b || !emulated) return assumed_link(gpu, a == b);
  const EmulatedLink link = slower_link({na.emulate_link_gbps, na.emulate_link_latency_us},
                                        {nb.emulate_link_gbps, nb.emulate_link_latency_us});
  return {link.gbps * 1e9 / 8, link.latency_us * 1e-6};
}

// The slowest link between any device of `from` and any of `to`.
plan::Link slowest_link(const config::JobConfig& c, const std::vector<config::DeviceId>& from,
                        const std::vector<config::DeviceId>& to, bool gpu) {
  plan::Link worst = assumed_link(gpu, true);
  double worst_time = -1;
  for (const config::DeviceId& a : from) {
    for (const config::DeviceId& b : to) {
      const plan::Link l = link_between(c, a.host, b.host, gpu);
      const double t = l.transfer_s(1e6);  // compare at a megabyte
      if (t > worst_time) worst = l, worst_time = t;
    }
  }
  return worst;
}

double peak_flops(const DeviceProfile& type, config::Precision precision) {
  const double tflops = precision == config::Precision::bf16 ? type.peak_tflops_bf16 : type.peak_tflops_fp32;
  return 1e12 * tflops;
}

// The profile's times scaled from its micro-batch to `tokens` (linear in tokens).
std::optional<plan::MeasuredTimes> measured_times(const std::vector<DeviceTypeProfile>& profiles,
                                                  const std::string& type, double tokens) {
  for (const DeviceTypeProfile& p : profiles) {
    if (p.device_type != type) continue;
    const double scale = tokens / static_cast<double>(p.micro_batch * p.seq_len);
    return plan::MeasuredTimes{scale * p.layer_forward_s, scale * p.layer_backward_s, scale * p.embed_forward_s,
                               scale * p.embed_backward_s, scale * p.head_forward_s, scale * p.head_backward_s};
  }
  return std::nullopt;
}

// The stage's slowest device type: a tp group runs at its slowest member's pace (each
// collective waits for it). Measured types compare by their profiled layer times, others
// (or a mix) by the catalogue peak in the job's precision.
const DeviceProfile& slowest_type(const config::LoadedConfig& loaded, const std::vector<DeviceTypeProfile>& profiles,
                                  const std::vector<config::DeviceId>& devices) {
  const config::JobConfig& c = loaded.config;
  auto layer_s = [&](const DeviceProfile& t) -> std::optional<double> {
    for (const DeviceTypeProfile& p : profiles)
      if (p.device_type == t.name) return p.layer_forward_s + p.layer_backward_s;
    return std::nullopt;
  };
  const DeviceProfile* slowest = nullptr;
  for (const config::DeviceId& d : devices) {
    const DeviceProfile* t = loaded.catalog.find(node_of(c, d.host).device_type);
    if (slowest == nullptr) {
      slowest = t;
      continue;
    }
    const std::optional<double> a = layer_s(*t), b = layer_s(*slowest);
    const bool slower = a && b ? *a > *b : peak_flops(*t, c.training.precision) < peak_flops(*slowest, c.training.precision);
    if (slower) slowest = t;
  }
  return *slowest;
}

// The smallest memory_gib of the stage's devices, in bytes (0: unbounded, when every one is).
double smallest_memory_bytes(const config::LoadedConfig& loaded, const std::vector<config::DeviceId>& devices) {
  double smallest = 0;
  for (const config::DeviceId& d : devices) {
    const double bytes = loaded.catalog.find(node_of(loaded.config, d.host).device_type)->memory_gib * double(1 << 30);
    if (bytes > 0 && (smallest == 0 || bytes < smallest)) smallest = bytes;
  }
  return smallest;
}

// A tied embedding that a pipeline holds on its first and last stage has its gradient summed
// over every holder (both ends of each pipelined replica, the one stage of the others) by its
// own all_reduce after the buckets: the ends of each pipeline pay it on top of their sync.
void add_tied_embedding_sync(const config::LoadedConfig& loaded, const plan::ModelFacts& facts,
                             std::vector<plan::ReplicaCost>& replicas) {
  const config::JobConfig& c = loaded.config;
  if (!facts.head_shares_embedding) return;
  int64_t holders = 0;
  std::vector<config::DeviceId> ends;
  for (const config::ReplicaSection& replica : c.parallel.replicas) {
    holders += replica.stages.size() > 1 ? 2 : 1;
    for (const config::StageSection* stage : {&replica.stages.front(), &replica.stages.back()})
      ends.insert(ends.end(), stage->devices.begin(), stage->devices.end());
  }
  if (holders == static_cast<int64_t>(replicas.size())) return;  // no pipeline: in the buckets
  const bool gpu = loaded.catalog.find(node_of(c, ends[0].host).device_type)->kind == DeviceKind::gpu;
  const plan::Link link = slowest_link(c, ends, ends, gpu);
  for (size_t r = 0; r < replicas.size(); ++r) {
    const config::ReplicaSection& replica = c.parallel.replicas[r];
    if (replica.stages.size() < 2) continue;
    for (size_t s : {size_t{0}, replica.stages.size() - 1}) {
      const double bytes = 4 * facts.last_params / static_cast<double>(replica.stages[s].tp());
      replicas[r].stages[s].grad_sync_s += plan::ring_all_reduce_s(bytes, holders, link);
    }
  }
}

}  // namespace

LayoutEstimate estimate_layout(const config::LoadedConfig& loaded, const std::vector<DeviceTypeProfile>& profiles) {
  const config::JobConfig& c = loaded.config;
  const double activation_bytes = c.training.precision == config::Precision::bf16   ? 2.0
                                  : c.training.precision == config::Precision::fp64 ? 8.0
                                                                                    : 4.0;
  const plan::ModelFacts facts = model_facts(c.model, c.training.seq_len, activation_bytes);
  LayoutEstimate e;
  const int64_t num_replicas = static_cast<int64_t>(c.parallel.replicas.size());
  for (size_t r = 0; r < c.parallel.replicas.size(); ++r) {
    const config::ReplicaSection& replica = c.parallel.replicas[r];
    plan::ReplicaCost cost;
    cost.schedule = replica.schedule == config::PipelineSchedule::gpipe ? pipeline::ScheduleKind::gpipe
                                                                        : pipeline::ScheduleKind::one_f_one_b;
    cost.micro_batches = c.replica_micro_batches(r);
    std::vector<StageEstimateInfo> infos;
    for (size_t s = 0; s < replica.stages.size(); ++s) {
      const config::StageSection& stage = replica.stages[s];
      const DeviceProfile& type = slowest_type(loaded, profiles, stage.devices);
      const bool gpu = type.kind == DeviceKind::gpu;
      const double efficiency = gpu ? kGpuEfficiency : kCpuEfficiency;
      plan::DeviceRates rates;
      rates.flops_per_s = peak_flops(type, c.training.precision) * efficiency;
      rates.memory_bytes_per_s = type.memory_bandwidth_gbs * 1e9;
      rates.tp = slowest_link(c, stage.devices, stage.devices, gpu);
      if (s + 1 < replica.stages.size()) rates.next_stage = slowest_link(c, stage.devices, replica.stages[s + 1].devices, gpu);
      // The gradient sync spans every replica's devices (a split collective between unlike replicas).
      std::vector<config::DeviceId> everyone;
      for (const config::ReplicaSection& other : c.parallel.replicas)
        for (const config::StageSection& st : other.stages) everyone.insert(everyone.end(), st.devices.begin(), st.devices.end());
      rates.replicas = slowest_link(c, stage.devices, everyone, gpu);
      rates.measured = measured_times(profiles, type.name, static_cast<double>(replica.micro_batch * c.training.seq_len));
      plan::StageShape shape{stage.layers.first, stage.layers.last, s == 0, s + 1 == replica.stages.size(),
                             stage.tp(), replica.micro_batch, c.training.seq_len, num_replicas};
      cost.stages.push_back(plan::estimate_stage(facts, shape, rates));
      infos.push_back({rates.measured.has_value(), format_device_list(stage.devices), type.name, smallest_memory_bytes(loaded, stage.devices),
                       stage.layers.first, stage.layers.last, stage.tp()});
      e.peak_flops += static_cast<double>(stage.tp()) * peak_flops(type, c.training.precision);
    }
    e.replicas.push_back(std::move(cost));
    e.stages.push_back(std::move(infos));
  }
  add_tied_embedding_sync(loaded, facts, e.replicas);
  e.prediction = plan::predict_layout(e.replicas);
  e.tokens_per_step = static_cast<double>(c.training.global_batch * c.training.seq_len);
  const double layer_flops = facts.layer_forward_flops_per_token * static_cast<double>(facts.layers);
  e.flops_per_token = 3 * (layer_flops + facts.head_forward_flops_per_token);
  return e;
}

}  // namespace hetu::app
