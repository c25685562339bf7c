// The job's layout priced from the catalogue. See Note [Catalogue estimates] in lib/plan.
#include "app/layout_cost.h"

#include <cstdlib>
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

// The p2p link the profile measured between nodes a and b (a == b: within the node), if any.
const LinkProfile* measured_p2p(const Profile& profile, const std::string& a, const std::string& b) {
  for (const LinkProfile& l : profile.links) {
    if (l.kind != "p2p") continue;
    if (a == b ? (l.scope == "within" && l.hosts[0] == a)
               : (l.scope == "between" && l.hosts.size() == 2 &&
                  ((l.hosts[0] == a && l.hosts[1] == b) || (l.hosts[0] == b && l.hosts[1] == a)))) {
      return &l;
    }
  }
  return nullptr;
}

// The link between devices of nodes a and b: the profile's measured one, else the emulated
// one when either node emulates (the slower side, as the emulation does: slower_link), else
// the assumption.
plan::Link link_between(const config::JobConfig& c, const std::string& a, const std::string& b, bool gpu,
                        const Profile& profile) {
  if (const LinkProfile* measured = measured_p2p(profile, a, b)) {
    return {measured->gbps > 0 ? measured->gbps * 1e9 / 8 : 0.0, measured->latency_us * 1e-6};
  }
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
                        const std::vector<config::DeviceId>& to, bool gpu, const Profile& profile) {
  plan::Link worst = assumed_link(gpu, true);
  double worst_time = -1;
  for (const config::DeviceId& a : from) {
    for (const config::DeviceId& b : to) {
      const plan::Link l = link_between(c, a.host, b.host, gpu, profile);
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

// The profile entry of `type` for a stage of `tp` devices and micro-batches of `micro_batch`:
// measured at that tp when there is such an entry (else at tp 1), at the nearest micro-batch.
const DeviceTypeProfile* profile_entry(const Profile& profile, const std::string& type, int64_t tp,
                                       int64_t micro_batch) {
  const DeviceTypeProfile* best = nullptr;
  auto distance = [&](const DeviceTypeProfile& p) { return std::abs(p.micro_batch - micro_batch); };
  for (int64_t want : {tp, int64_t{1}}) {
    for (const DeviceTypeProfile& p : profile.devices) {
      if (p.device_type == type && p.tp == want && (best == nullptr || distance(p) < distance(*best))) best = &p;
    }
    if (best != nullptr) return best;
  }
  return nullptr;
}

// The entry's times scaled from its micro-batch to `tokens` (linear in tokens).
plan::MeasuredTimes measured_times(const DeviceTypeProfile& p, int64_t tp, double tokens) {
  const double scale = tokens / static_cast<double>(p.micro_batch * p.seq_len);
  return plan::MeasuredTimes{scale * p.layer_forward_s, scale * p.layer_backward_s, scale * p.embed_forward_s,
                             scale * p.embed_backward_s, scale * p.head_forward_s,  scale * p.head_backward_s,
                             p.tp == tp && tp > 1};
}

// What the profile measured beyond compute replaces the estimate: the AdamW step (per
// parameter) and the activations a layer keeps (per token, split over tp when measured at tp 1).
void apply_measured(const DeviceTypeProfile& p, int64_t layers, int64_t tp, double tokens, plan::StageCost& cost) {
  if (p.optimizer_s > 0 && p.optimizer_params > 0) {
    cost.optimizer_s = p.optimizer_s / p.optimizer_params * cost.param_bytes / 4;
  }
  if (p.layer_activation_bytes > 0) {
    const double per_token = p.layer_activation_bytes / static_cast<double>(p.micro_batch * p.seq_len);
    cost.activation_bytes = static_cast<double>(layers) * per_token * tokens / (p.tp == tp ? 1.0 : static_cast<double>(tp));
  }
}

}  // namespace

LayoutEstimate estimate_layout(const config::LoadedConfig& loaded, const Profile& profile) {
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
      const DeviceProfile& type = *loaded.catalog.find(node_of(c, stage.devices[0].host).device_type);
      const bool gpu = type.kind == DeviceKind::gpu;
      const double efficiency = gpu ? kGpuEfficiency : kCpuEfficiency;
      plan::DeviceRates rates;
      rates.flops_per_s = peak_flops(type, c.training.precision) * efficiency;
      rates.memory_bytes_per_s = type.memory_bandwidth_gbs * 1e9;
      rates.tp = slowest_link(c, stage.devices, stage.devices, gpu, profile);
      if (s + 1 < replica.stages.size()) rates.next_stage = slowest_link(c, stage.devices, replica.stages[s + 1].devices, gpu, profile);
      // The gradient sync spans every replica's devices (a split collective between unlike replicas).
      std::vector<config::DeviceId> everyone;
      for (const config::ReplicaSection& other : c.parallel.replicas)
        for (const config::StageSection& st : other.stages) everyone.insert(everyone.end(), st.devices.begin(), st.devices.end());
      rates.replicas = slowest_link(c, stage.devices, everyone, gpu, profile);
      const double tokens = static_cast<double>(replica.micro_batch * c.training.seq_len);
      const DeviceTypeProfile* measured = profile_entry(profile, type.name, stage.tp(), replica.micro_batch);
      if (measured != nullptr) rates.measured = measured_times(*measured, stage.tp(), tokens);
      plan::StageShape shape{stage.layers.first, stage.layers.last, s == 0, s + 1 == replica.stages.size(),
                             stage.tp(), replica.micro_batch, c.training.seq_len, num_replicas};
      cost.stages.push_back(plan::estimate_stage(facts, shape, rates));
      if (measured != nullptr) apply_measured(*measured, stage.layers.count(), stage.tp(), tokens, cost.stages.back());
      infos.push_back({rates.measured.has_value(), format_device_list(stage.devices), type.name, type.memory_gib * double(1 << 30),
                       stage.layers.first, stage.layers.last, stage.tp()});
      e.peak_flops += static_cast<double>(stage.tp()) * peak_flops(type, c.training.precision);
    }
    e.replicas.push_back(std::move(cost));
    e.stages.push_back(std::move(infos));
  }
  e.prediction = plan::predict_layout(e.replicas);
  e.tokens_per_step = static_cast<double>(c.training.global_batch * c.training.seq_len);
  const double layer_flops = facts.layer_forward_flops_per_token * static_cast<double>(facts.layers);
  e.flops_per_token = 3 * (layer_flops + facts.head_forward_flops_per_token);
  return e;
}

}  // namespace hetu::app
