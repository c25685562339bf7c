// The job's layout priced from the catalogue. See Note [Catalogue estimates] in lib/plan.
#include "lib/plan/layout_cost.h"

#include "lib/config/compute_device.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>

#include "lib/config/device_spec.h"
#include "lib/hspmd/emulated_comm.h"
#include "lib/plan/model_facts.h"
#include "lib/plan/profiled_link.h"
#include "lib/plan/stage_estimate.h"
#include "lib/util/error.h"

namespace hetu::plan {
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

// A node's network as declared (link_gbps, link_latency_us), the assumption where not.
plan::Link declared_link(const config::NodeSection& node, bool gpu) {
  plan::Link link = assumed_link(gpu, false);
  if (node.link_gbps > 0) link.bytes_per_s = node.link_gbps * 1e9 / 8;
  if (node.link_latency_us > 0) link.latency_s = node.link_latency_us * 1e-6;
  return link;
}

// The p2p link the profile measured between nodes a and b (a == b: within the node), if any.
const profile::LinkProfile* measured_p2p(const profile::Profile& profile, const std::string& a, const std::string& b) {
  for (const profile::LinkProfile& l : profile.links) {
    if (l.kind != "p2p" || l.hosts.empty()) continue;
    if (a == b ? (l.scope == "within" && l.hosts[0] == a)
               : (l.scope == "between" && l.hosts.size() == 2 &&
                  ((l.hosts[0] == a && l.hosts[1] == b) || (l.hosts[0] == b && l.hosts[1] == a)))) {
      return &l;
    }
  }
  return nullptr;
}

// The link between devices of nodes a and b: the emulated one when either node emulates
// (the slower side, as the emulation does: slower_link), else the profile's curve for the
// nodes' device types and the GPUs of each taking part (`flows` on a, `peer_flows` on b;
// lib/plan/profiled_link.h), else the slower side of the declared networks (link_gbps,
// link_latency_us), else the assumption. Between nodes, a non-emulated link is shared by the
// `flows` transfers a node makes at once (Note [Link sharing]); the emulation delays every
// message on its own.
plan::Link link_between(const config::JobConfig& c, const profile::Profile& profile, const std::string& a,
                        const std::string& b, bool gpu, int64_t flows, int64_t peer_flows) {
  if (const profile::LinkProfile* measured = measured_p2p(profile, a, b)) {
    return {measured->gbps > 0 ? measured->gbps * 1e9 / 8 : 0.0, measured->latency_us * 1e-6};
  }
  const config::NodeSection& na = node_of(c, a);
  const config::NodeSection& nb = node_of(c, b);
  const bool emulated = na.emulate_link_gbps > 0 || nb.emulate_link_gbps > 0 || na.emulate_link_latency_us > 0 ||
                        nb.emulate_link_latency_us > 0;
  if (a != b && emulated) {
    const EmulatedLink link = slower_link({na.emulate_link_gbps, na.emulate_link_latency_us},
                                          {nb.emulate_link_gbps, nb.emulate_link_latency_us});
    return {link.gbps * 1e9 / 8, link.latency_us * 1e-6};
  }
  plan::Link best = assumed_link(gpu, true);
  if (a != b) {
    const plan::Link la = declared_link(na, gpu), lb = declared_link(nb, gpu);
    best = {std::min(la.bytes_per_s, lb.bytes_per_s), std::max(la.latency_s, lb.latency_s)};
  }
  if (const profile::LinkProfile* l = profiled_curve(profile, a == b ? "within" : "between",
                                                     {na.device_type, flows}, {nb.device_type, peer_flows})) {
    best = curve_link(*l);
  }
  if (a != b) best.shared_by = flows;
  return best;
}

// The devices of `devices` on `host`.
int64_t devices_on(const std::vector<config::DeviceId>& devices, const std::string& host) {
  return std::count_if(devices.begin(), devices.end(), [&](const config::DeviceId& d) { return d.host == host; });
}

// The slowest of a list of links (compared at a megabyte; the first of equals).
plan::Link slowest_of(const std::vector<plan::Link>& links) {
  plan::Link worst = links.front();
  for (const plan::Link& l : links)
    if (l.transfer_s(1e6) > worst.transfer_s(1e6)) worst = l;
  return worst;
}

// The hosts of `devices`, each once, in order (a link depends only on the hosts).
std::vector<std::string> hosts_of(const std::vector<config::DeviceId>& devices) {
  std::vector<std::string> hosts;
  for (const config::DeviceId& d : devices)
    if (std::find(hosts.begin(), hosts.end(), d.host) == hosts.end()) hosts.push_back(d.host);
  return hosts;
}

// The slowest link between any device of `from` and any of `to`, each priced with the devices
// of `from` and `to` on its two nodes taking part at once (at most `most_flows` of a node).
plan::Link slowest_link(const config::JobConfig& c, const profile::Profile& profile,
                        const std::vector<config::DeviceId>& from, const std::vector<config::DeviceId>& to, bool gpu,
                        int64_t most_flows = std::numeric_limits<int64_t>::max()) {
  std::vector<plan::Link> found;
  for (const std::string& a : hosts_of(from))
    for (const std::string& b : hosts_of(to))
      found.push_back(link_between(c, profile, a, b, gpu, std::min(devices_on(from, a), most_flows),
                                   std::min(devices_on(to, b), most_flows)));
  return slowest_of(found);
}

double peak_flops(const config::DeviceProfile& type, config::Precision precision) {
  return 1e12 * config::peak_tflops(type, precision);
}

// The entry of `type` measured at `tp` nearest to micro-batches of `tokens` (the same size
// preferred), if any.
const profile::DeviceTypeProfile* nearest_entry(const profile::Profile& profile, const std::string& type, int64_t tp, double tokens) {
  const profile::DeviceTypeProfile* best = nullptr;
  double best_distance = 0;
  for (const profile::DeviceTypeProfile& p : profile.devices) {
    if (p.device_type != type || p.tp != tp) continue;
    const double distance = std::abs(std::log(tokens / static_cast<double>(p.micro_batch * p.seq_len)));
    if (best == nullptr || distance < best_distance) best = &p, best_distance = distance;
  }
  return best;
}

// The profile entry of `type` for a stage of `tp` devices running micro-batches of `tokens`:
// one measured for this tp; else, when another type was measured at this tp and both at tp 1,
// that entry with its times scaled by the two types' tp-1 layer times (the same shard of the
// model on a device that many times slower: what a tp-1 split misses, the pieces tp cannot
// split and the collectives, stays measured; the collectives are those of the other type's
// links, see Note [Catalogue estimates]); else one measured on one device (tp 1, split over
// tp by the estimate).
std::optional<profile::DeviceTypeProfile> profile_for(const profile::Profile& profile, const std::string& type, int64_t tp,
                                             double tokens) {
  if (const profile::DeviceTypeProfile* own = nearest_entry(profile, type, tp, tokens)) return *own;
  const profile::DeviceTypeProfile* own_tp1 = nearest_entry(profile, type, 1, tokens);
  if (tp == 1 || own_tp1 == nullptr) return std::nullopt;
  for (const profile::DeviceTypeProfile& other : profile.devices) {
    if (other.device_type == type || other.tp != tp) continue;
    const profile::DeviceTypeProfile* found = nearest_entry(profile, other.device_type, tp, tokens);
    const profile::DeviceTypeProfile* other_tp1 =
        nearest_entry(profile, other.device_type, 1, static_cast<double>(found->micro_batch * found->seq_len));
    if (other_tp1 == nullptr || other_tp1->micro_batch != found->micro_batch ||
        own_tp1->micro_batch != found->micro_batch || other_tp1->layer_forward_s + other_tp1->layer_backward_s <= 0) {
      continue;
    }
    const double ratio = (own_tp1->layer_forward_s + own_tp1->layer_backward_s) /
                         (other_tp1->layer_forward_s + other_tp1->layer_backward_s);
    profile::DeviceTypeProfile borrowed = *found;
    borrowed.device_type = type;
    for (double* t : {&borrowed.layer_forward_s, &borrowed.layer_backward_s, &borrowed.embed_forward_s,
                      &borrowed.embed_backward_s, &borrowed.head_forward_s, &borrowed.head_backward_s,
                      &borrowed.optimizer_s}) {
      *t *= ratio;
    }
    borrowed.reserved_bytes = own_tp1->reserved_bytes;
    return borrowed;
  }
  return *own_tp1;
}

// The profile's times scaled from its micro-batch to `tokens` (linear in tokens).
std::optional<plan::MeasuredTimes> measured_times(const std::optional<profile::DeviceTypeProfile>& p, int64_t tp, double tokens) {
  if (!p) return std::nullopt;
  const double scale = tokens / static_cast<double>(p->micro_batch * p->seq_len);
  return plan::MeasuredTimes{scale * p->layer_forward_s, scale * p->layer_backward_s, scale * p->embed_forward_s,
                             scale * p->embed_backward_s, scale * p->head_forward_s, scale * p->head_backward_s,
                             p->tp == tp, p->optimizer_s, p->optimizer_params};
}

// The profile's memory for a stage of `tp` devices, its bytes scaled to `tokens`, when it
// measured them: activations only from an entry measured at the stage's tp (a tp-1 entry
// cannot say which of a layer's tensors tp splits; the family's count does), the reserved
// bytes from any.
std::optional<plan::MeasuredMemory> measured_memory(const std::optional<profile::DeviceTypeProfile>& p, double tokens, int64_t tp) {
  if (!p || (p->layer_activation_bytes <= 0 && p->reserved_bytes <= 0)) return std::nullopt;
  plan::MeasuredMemory m;
  m.reserved_bytes = p->reserved_bytes;
  if (p->tp != tp) return m;
  const double scale = tokens / static_cast<double>(p->micro_batch * p->seq_len);
  m.layer_activation_bytes = scale * p->layer_activation_bytes;
  m.first_activation_bytes = scale * p->embed_activation_bytes;
  m.last_activation_bytes = scale * p->head_activation_bytes;
  m.head_workspace_bytes = scale * p->head_workspace_bytes;
  return m;
}

// The devices of each replica's stage that holds `stage`'s parameters (the stage's first
// layer stands for them), `stage` itself among them.
std::vector<std::vector<config::DeviceId>> holders_of(const config::JobConfig& c, const config::StageSection& stage) {
  std::vector<std::vector<config::DeviceId>> holders;
  for (const config::ReplicaSection& replica : c.parallel.replicas)
    for (const config::StageSection& other : replica.stages)
      if (other.layers.first <= stage.layers.first && stage.layers.first <= other.layers.last) holders.push_back(other.devices);
  return holders;
}

// ZeRO-1's share of a stage device: its tp over the devices of every replica that hold the
// stage's parameters, or 0 when no other replica holds them (nothing is duplicated across
// replicas; duplicated norms inside a tp group are left out).
double zero_state_share(const config::JobConfig& c, const config::StageSection& stage) {
  int64_t holders = 0;
  for (const std::vector<config::DeviceId>& devices : holders_of(c, stage)) holders += static_cast<int64_t>(devices.size());
  return holders > stage.tp() ? static_cast<double>(stage.tp()) / static_cast<double>(holders) : 0.0;
}

// The links of a stage's gradient sync (Note [Hierarchical gradient sync]): the most holders
// (replicas' stages with its parameters) sharing a node, the slowest link within such a node,
// and the slowest between the stage's nodes and the other holders' nodes, shared by the
// holders' devices on the node (each sends its share at once).
void set_sync_links(const config::JobConfig& c, const profile::Profile& profile, const config::StageSection& stage,
                    bool gpu, plan::DeviceRates& rates) {
  const std::vector<std::vector<config::DeviceId>> holders = holders_of(c, stage);
  std::vector<config::DeviceId> all;
  for (const std::vector<config::DeviceId>& devices : holders) all.insert(all.end(), devices.begin(), devices.end());
  std::vector<plan::Link> within, between;
  for (const std::string& host : hosts_of(all)) {
    const int64_t sharing = std::count_if(holders.begin(), holders.end(),
                                          [&](const std::vector<config::DeviceId>& d) { return devices_on(d, host) > 0; });
    if (sharing > rates.replicas_per_node) rates.replicas_per_node = sharing;
    if (sharing > 1) within.push_back(link_between(c, profile, host, host, gpu, devices_on(all, host), devices_on(all, host)));
  }
  for (const std::string& a : hosts_of(stage.devices))
    for (const std::string& b : hosts_of(all))
      if (a != b) between.push_back(link_between(c, profile, a, b, gpu, devices_on(all, a), devices_on(all, b)));
  if (!within.empty()) rates.replicas_within = slowest_of(within);
  if (!between.empty()) rates.replicas = slowest_of(between);
}

plan::ModelFacts job_model_facts(const config::JobConfig& c) {
  const double activation_bytes = c.training.precision == config::Precision::bf16 || c.training.precision == config::Precision::fp16 ? 2.0
                                  : c.training.precision == config::Precision::fp64 ? 8.0
                                                                                    : 4.0;
  return model_facts(c.model, c.training.seq_len, activation_bytes);
}

// The stage's slowest device type: a tp group runs at its slowest member's pace (each
// collective waits for it). Measured types compare by their profiled layer times, others
// (or a mix) by the catalogue peak in the job's precision.
const config::DeviceProfile& slowest_type(const config::LoadedConfig& loaded, const profile::Profile& profile,
                                  const std::vector<config::DeviceId>& devices) {
  const config::JobConfig& c = loaded.config;
  auto layer_s = [&](const config::DeviceProfile& t) -> std::optional<double> {
    for (const profile::DeviceTypeProfile& p : profile.devices)
      if (p.device_type == t.name) return p.layer_forward_s + p.layer_backward_s;
    return std::nullopt;
  };
  const config::DeviceProfile* slowest = nullptr;
  for (const config::DeviceId& d : devices) {
    const config::DeviceProfile* t = loaded.catalog.find(node_of(c, d.host).device_type);
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

}  // namespace

LayoutEstimate estimate_layout(const config::LoadedConfig& loaded, const profile::Profile& profile) {
  const config::JobConfig& c = loaded.config;
  const plan::ModelFacts facts = job_model_facts(c);
  LayoutEstimate e;
  const int64_t num_replicas = static_cast<int64_t>(c.parallel.replicas.size());
  std::vector<config::DeviceId> tied_holders;  // every replica's end stages: a tied embedding split over them
  for (const config::ReplicaSection& replica : c.parallel.replicas)
    for (const config::StageSection* end : {&replica.stages.front(), &replica.stages.back()})
      tied_holders.insert(tied_holders.end(), end->devices.begin(), end->devices.end());
  for (size_t r = 0; r < c.parallel.replicas.size(); ++r) {
    const config::ReplicaSection& replica = c.parallel.replicas[r];
    plan::ReplicaCost cost;
    cost.schedule = replica.schedule == config::PipelineSchedule::gpipe ? pipeline::ScheduleKind::gpipe
                                                                        : pipeline::ScheduleKind::one_f_one_b;
    cost.micro_batches = c.replica_micro_batches(r);
    std::vector<StageEstimateInfo> infos;
    for (size_t s = 0; s < replica.stages.size(); ++s) {
      const config::StageSection& stage = replica.stages[s];
      const config::DeviceProfile& type = slowest_type(loaded, profile, stage.devices);
      const bool gpu = type.kind == config::DeviceKind::gpu;
      const double efficiency = gpu ? kGpuEfficiency : kCpuEfficiency;
      plan::DeviceRates rates;
      rates.flops_per_s = peak_flops(type, c.training.precision) * efficiency;
      rates.memory_bytes_per_s = type.memory_bandwidth_gbs * 1e9;
      rates.tp = slowest_link(c, profile, stage.devices, stage.devices, gpu);
      rates.tp.shared_by = 1;  // a tp ring crosses a node boundary once each way
      if (s + 1 < replica.stages.size()) {
        const config::StageSection& next = replica.stages[s + 1];
        rates.next_stage_tp = next.tp();
        rates.next_stage = slowest_link(c, profile, stage.devices, next.devices, gpu, std::min(stage.tp(), next.tp()));
        rates.next_stage_gather = slowest_link(c, profile, next.devices, next.devices, gpu);
        rates.next_stage_gather.shared_by = 1;  // a ring crosses a node boundary once each way
      }
      set_sync_links(c, profile, stage, gpu, rates);
      rates.tied = slowest_link(c, profile, stage.devices, tied_holders, gpu);
      const double tokens = static_cast<double>(replica.micro_batch * c.training.seq_len);
      const std::optional<profile::DeviceTypeProfile> entry = profile_for(profile, type.name, stage.tp(), tokens);
      rates.measured = measured_times(entry, stage.tp(), tokens);
      rates.measured_memory = measured_memory(entry, tokens, stage.tp());
      plan::StageShape shape{stage.layers.first, stage.layers.last, s == 0, s + 1 == replica.stages.size(),
                             stage.tp(), replica.micro_batch, c.training.seq_len, num_replicas};
      cost.stages.push_back(plan::estimate_stage(facts, shape, rates));
      if (c.parallel.zero == 1) cost.stages.back().zero_state_share = zero_state_share(c, stage);
      infos.push_back({rates.measured.has_value(), format_device_list(stage.devices), type.name, smallest_memory_bytes(loaded, stage.devices),
                       stage.layers.first, stage.layers.last, stage.tp(), stage.tp() > 1 ? rates.tp.latency_s : 0.0,
                       s + 1 < replica.stages.size() ? rates.next_stage.latency_s : 0.0});
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

plan::SearchCluster search_cluster(const config::LoadedConfig& loaded, const profile::Profile& profile) {
  const config::JobConfig& c = loaded.config;
  plan::SearchCluster cluster;
  std::vector<std::string> names;
  std::vector<bool> gpu;  // per node
  for (const config::NodeSection& node : c.cluster.nodes) {
    const config::DeviceProfile& type = *loaded.catalog.find(node.device_type);
    auto it = std::find(names.begin(), names.end(), type.name);
    if (it == names.end()) {
      plan::SearchDeviceType t;
      t.name = type.name;
      t.rates.flops_per_s = peak_flops(type, c.training.precision) * (type.kind == config::DeviceKind::gpu ? kGpuEfficiency : kCpuEfficiency);
      t.rates.memory_bytes_per_s = type.memory_bandwidth_gbs * 1e9;
      const double tokens = static_cast<double>(c.training.micro_batch * c.training.seq_len);
      t.rates.measured = measured_times(profile_for(profile, type.name, 1, tokens), 1, tokens);
      if (t.rates.measured) t.rates.measured->includes_tp = false;  // a stage of tp k splits it over k
      // What the profile measured (or borrows, profile_for) on a rank of a tp group.
      for (int64_t tp = 2; t.rates.measured && tp <= c.cluster.num_devices(); ++tp) {
        const std::optional<profile::DeviceTypeProfile> at = profile_for(profile, type.name, tp, tokens);
        if (at && at->tp == tp) t.measured_at_tp.push_back({tp, *measured_times(at, tp, tokens)});
      }
      t.memory_bytes = type.memory_gib * double(1 << 30);
      cluster.types.push_back(std::move(t));
      it = names.insert(names.end(), type.name);
    }
    cluster.nodes.push_back({static_cast<int64_t>(it - names.begin()), node.count});
    gpu.push_back(type.kind == config::DeviceKind::gpu);
  }
  for (size_t a = 0; a < c.cluster.nodes.size(); ++a) {
    cluster.links.emplace_back();
    for (const config::NodeSection& other : c.cluster.nodes)
      cluster.links.back().push_back(link_between(c, profile, c.cluster.nodes[a].host, other.host, gpu[a], 1, 1));
  }
  return cluster;
}

plan::SearchJob search_job(const config::LoadedConfig& loaded) {
  const config::JobConfig& c = loaded.config;
  HT_USAGE_CHECK(c.training.global_batch % c.training.micro_batch == 0, "hetu plan: training.global_batch = {} is not a "
                 "multiple of training.micro_batch = {}", c.training.global_batch, c.training.micro_batch);
  plan::SearchJob job;
  job.facts = job_model_facts(c);
  job.micro_batch = c.training.micro_batch;
  job.seq_len = c.training.seq_len;
  job.micro_batches = c.training.global_batch / c.training.micro_batch;
  // The job-file rule for a stage's tp (config_validate.cpp, check_stage_tp).
  job.tp_divides = {c.model.heads, c.model.kv_heads, c.model.ffn_hidden};
  job.end_tp_divides = {c.model.padded_vocab()};
  return job;
}

}  // namespace hetu::plan
