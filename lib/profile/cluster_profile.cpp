// Measuring a cluster's profile on all its ranks at once, or on this CPU in one process.
#include "lib/profile/cluster_profile.h"

#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>

#include "lib/config/compute_device.h"
#include "lib/emulation/device_emulation.h"
#include "lib/models/parallel_model.h"
#include "lib/ops/ops.h"
#include "lib/profile/link_probe.h"
#include "lib/profile/profile_measure.h"
#include "lib/util/error.h"

namespace hetu::profile {
namespace {

// The rounds the measured windows are taken in, every tp degree once a round.
constexpr int kRounds = 3;

// The device types of the cluster, in node order, each once.
std::vector<std::string> device_types(const config::JobConfig& c) {
  std::vector<std::string> out;
  for (const config::NodeSection& node : c.cluster.nodes) {
    if (std::find(out.begin(), out.end(), node.device_type) == out.end()) out.push_back(node.device_type);
  }
  return out;
}

// 1 up to the largest node's device count (tp groups stay within a node).
std::vector<int64_t> tp_degrees(const config::JobConfig& c) {
  int64_t largest = 1;
  for (const config::NodeSection& node : c.cluster.nodes) largest = std::max(largest, node.count);
  std::vector<int64_t> out;
  for (int64_t k = 1; k <= largest; ++k) out.push_back(k);
  return out;
}

// Every node's ranks in consecutive groups of k (the rest of a node's ranks alone, to keep
// them busy; they are not recorded), each group a replica of one stage holding every layer.
pipeline::ParallelLayout tp_layout(const config::JobConfig& c, const launch::RankMap& ranks, int64_t k) {
  pipeline::ParallelLayout layout;
  auto add = [&](std::vector<DeviceId> devices) {
    pipeline::ReplicaLayout replica;
    replica.stages.push_back({DeviceGroup(std::move(devices)), 0, c.model.layers - 1});
    replica.batch_offset = static_cast<int64_t>(layout.replicas.size());
    layout.replicas.push_back(std::move(replica));
  };
  for (const config::NodeSection& node : c.cluster.nodes) {
    int64_t i = 0;
    for (; i + k <= node.count; i += k) {
      std::vector<DeviceId> group;
      for (int64_t j = i; j < i + k; ++j) group.push_back(ranks.rank_of_device.at({node.host, j}));
      add(std::move(group));
    }
    for (; i < node.count; ++i) add({ranks.rank_of_device.at({node.host, i})});
  }
  layout.global_batch = static_cast<int64_t>(layout.replicas.size());
  return layout;
}

// Sums of the measurements of every (type, tp, micro-batch) slot over the ranks.
enum Field : size_t { kEmbedF, kEmbedB, kLayerF, kLayerB, kHeadF, kHeadB, kActivation, kOptimizer, kParams, kSpread,
                      kCount, kFields };

void add(double* slot, const PieceTimes& t, double optimizer_s, double params) {
  slot[kEmbedF] += t.embed_forward_s, slot[kEmbedB] += t.embed_backward_s;
  slot[kLayerF] += t.layer_forward_s, slot[kLayerB] += t.layer_backward_s;
  slot[kHeadF] += t.head_forward_s, slot[kHeadB] += t.head_backward_s;
  slot[kActivation] += t.layer_activation_bytes;
  slot[kOptimizer] += optimizer_s, slot[kParams] += params;
  slot[kSpread] += t.spread;
  slot[kCount] += 1;
}

DeviceTypeProfile entry(const config::JobConfig& c, std::string type, int64_t tp, int64_t micro_batch,
                        const double* slot) {
  const double n = slot[kCount];
  DeviceTypeProfile p;
  p.device_type = std::move(type);
  p.tp = tp;
  p.micro_batch = micro_batch;
  p.seq_len = c.training.seq_len;
  p.precision = std::string(to_string(c.training.precision));
  p.ranks = static_cast<int64_t>(n);
  p.embed_forward_s = slot[kEmbedF] / n, p.embed_backward_s = slot[kEmbedB] / n;
  p.layer_forward_s = slot[kLayerF] / n, p.layer_backward_s = slot[kLayerB] / n;
  p.head_forward_s = slot[kHeadF] / n, p.head_backward_s = slot[kHeadB] / n;
  p.layer_activation_bytes = slot[kActivation] / n;
  p.optimizer_s = slot[kOptimizer] / n, p.optimizer_params = slot[kParams] / n;
  p.spread = slot[kSpread] / n;
  return p;
}

bool anyone(Communicator& host, bool mine) {
  Tensor flag = full({1}, mine ? 1.0 : 0.0, DType::f64);
  host.all_reduce(flag, host.world());
  return flag.item() > 0;
}

}  // namespace

std::vector<int64_t> profile_micro_batches(const config::JobConfig& c) {
  std::vector<int64_t> out;
  for (int64_t mb = 1; mb < c.training.micro_batch; mb *= 2) out.push_back(mb);
  out.push_back(c.training.micro_batch);
  return out;
}

Profile profile_cluster(const config::LoadedConfig& loaded, const launch::RankMap& ranks, Communicator& comm,
                        Communicator& host, Device compute) {
  const config::JobConfig& c = loaded.config;
  const int rank = static_cast<int>(comm.rank());
  const std::vector<std::string> types = device_types(c);
  const std::vector<int64_t> tps = tp_degrees(c), mbs = profile_micro_batches(c);
  const config::DeviceId& mine = ranks.device_of_rank.at(static_cast<size_t>(rank));
  const size_t my_type = std::find(types.begin(), types.end(), config::device_profile(loaded, mine)->name) - types.begin();
  auto slot_of = [&](size_t type, size_t k, size_t m) { return ((type * tps.size() + k) * mbs.size() + m) * kFields; };
  std::vector<double> sums(types.size() * tps.size() * mbs.size() * kFields, 0.0);
  const ComputePacing pacing{emulation::emulated_slowdown(host), [&host] { emulation::settle_emulated_compute(host); },
                             [&host] { return emulation::emulated_slowdown_sleep_s(host); },
                             emulation::emulated_compute_s(host) ? std::function<double()>([&host] { return *emulation::emulated_compute_s(host); })
                                                      : std::function<double()>()};

  // The tp degrees in turn, kRounds times, each round a share of the measured windows
  // (Note [Profile windows]: interleaving).
  const ProfileWindows windows;
  std::vector<PartWindows> gathered(tps.size());
  std::vector<bool> skipped(tps.size(), false);
  std::vector<double> params(tps.size(), 0.0);
  for (int round = 0; round < kRounds; ++round) {
    const int share = windows.measured * (round + 1) / kRounds - windows.measured * round / kRounds;
    for (size_t k = 0; k < tps.size(); ++k) {
      if (skipped[k]) continue;
      const pipeline::ParallelLayout layout = tp_layout(c, ranks, tps[k]);
      std::unique_ptr<ParallelModel> part;
      std::string why;
      try {
        part = std::make_unique<ParallelModel>(c.model, c.job.seed, layout, *layout.locate(rank), &comm,
                                               config::compute_dtype(c.training.precision));
      } catch (const UsageError& error) {
        why = error.message();
      }
      // Every rank skips a tp degree the model cannot split into (the heads, the vocabulary).
      if (anyone(host, part == nullptr)) {
        if (rank == 0 && tps[k] > 1) spdlog::info("profile: tp {} skipped ({})", tps[k], why.empty() ? "another rank" : why);
        skipped[k] = true;
        continue;
      }
      part->model().to(compute);
      params[k] = static_cast<double>(part->model().num_parameters());
      host.barrier(host.world());  // all ranks measure together
      pacing.settle();
      measure_windows(part->model(), compute, mbs, c.training.seq_len, pacing, {windows.warmup, share}, gathered[k]);
    }
  }
  for (size_t k = 0; k < tps.size(); ++k) {
    const pipeline::ParallelLayout layout = tp_layout(c, ranks, tps[k]);
    if (skipped[k] || layout.stage(*layout.locate(rank)).tp() != tps[k]) continue;  // recorded: a rank of a tp-k group
    const PartTimes t = estimate_part(gathered[k], c.model.layers);
    for (size_t m = 0; m < mbs.size(); ++m) add(&sums[slot_of(my_type, k, m)], t.micro_batches[m], t.optimizer_s, params[k]);
  }
  Tensor all = tensor_from(sums, {static_cast<int64_t>(sums.size())});
  host.all_reduce(all, host.world());
  const std::vector<double> total = to_vector(all);

  Profile profile;
  for (size_t type = 0; type < types.size(); ++type) {
    for (size_t k = 0; k < tps.size(); ++k) {
      for (size_t m = 0; m < mbs.size(); ++m) {
        const double* slot = &total[slot_of(type, k, m)];
        if (slot[kCount] > 0) profile.devices.push_back(entry(c, types[type], tps[k], mbs[m], slot));
      }
    }
  }
  profile.links = probe_links(c, ranks, comm, host, compute);
  return profile;
}

Profile profile_launched(const config::LoadedConfig& loaded, const launch::RankMap& ranks, int64_t world_size) {
  std::unique_ptr<Communicator> world = world_size == 1 ? make_local_communicator() : make_mpi_communicator();
  const config::DeviceId& device = ranks.device_of_rank.at(static_cast<size_t>(world->rank()));
  emulation::limit_cpu_memory(loaded, device);
  const Device compute = config::compute_device(loaded, device);
  // A [straggler] job is profiled as it will run: the slowdown paced by CPU time (its
  // predictions are compared with CPU-time measurements; Note [Emulated devices]).
  std::unique_ptr<Communicator> host = emulation::with_emulation(std::move(world), loaded, ranks, loaded.config.straggler.enabled);
  std::unique_ptr<Communicator> device_comm;
  if (compute.is_cuda()) {
    device_comm = world_size == 1 ? make_local_communicator(compute) : make_nccl_communicator(compute.index);
  }
  return profile_cluster(loaded, ranks, device_comm ? *device_comm : *host, *host, compute);
}

Profile profile_one_process(const config::LoadedConfig& loaded) {
  const config::JobConfig& c = loaded.config;
  std::unique_ptr<LanguageModel> model = build_model(
      c.model, ModelBuild{c.job.seed, ModelPart::whole(), nullptr, config::compute_dtype(c.training.precision)});
  const std::vector<int64_t> mbs = profile_micro_batches(c);
  std::optional<std::vector<double>> measured;  // slots per micro-batch, this CPU's raw times, once
  Profile profile;
  for (const std::string& name : device_types(c)) {
    const config::DeviceProfile* type = loaded.catalog.find(name);
    if (type->kind != config::DeviceKind::cpu) continue;  // left to the catalogue
    if (!measured) {
      measured.emplace(mbs.size() * kFields, 0.0);
      const double params = static_cast<double>(model->num_parameters());
      const PartTimes t = time_part(*model, Device::cpu(), mbs, c.training.seq_len, {});
      for (size_t m = 0; m < mbs.size(); ++m) add(&(*measured)[m * kFields], t.micro_batches[m], t.optimizer_s, params);
    }
    for (size_t m = 0; m < mbs.size(); ++m) {
      DeviceTypeProfile p = entry(c, name, 1, mbs[m], &(*measured)[m * kFields]);
      // What the emulation's sleeps add to every piece of compute on this type.
      for (double* t : {&p.layer_forward_s, &p.layer_backward_s, &p.embed_forward_s, &p.embed_backward_s,
                        &p.head_forward_s, &p.head_backward_s, &p.optimizer_s}) {
        *t *= type->emulate_slowdown;
      }
      profile.devices.push_back(std::move(p));
    }
  }
  return profile;
}

std::vector<std::string> describe_profile(const Profile& profile) {
  std::vector<std::string> lines;
  double noisiest = 0;
  for (const DeviceTypeProfile& p : profile.devices) {
    lines.push_back(fmt::format(
        "{} tp {} micro-batch {} x {}: layer forward {:.3f} ms, backward {:.3f} ms, {:.2f} MiB kept; embedding "
        "{:.3f} / {:.3f} ms; head and loss {:.3f} / {:.3f} ms; AdamW {:.3f} ms ({} rank{}{})",
        p.device_type, p.tp, p.micro_batch, p.seq_len, 1e3 * p.layer_forward_s, 1e3 * p.layer_backward_s,
        p.layer_activation_bytes / double(1 << 20), 1e3 * p.embed_forward_s, 1e3 * p.embed_backward_s,
        1e3 * p.head_forward_s, 1e3 * p.head_backward_s, 1e3 * p.optimizer_s, p.ranks, p.ranks == 1 ? "" : "s",
        p.spread > 0 ? fmt::format("; windows within {:.1f}%", 100 * p.spread) : ""));
    noisiest = std::max(noisiest, p.spread);
  }
  // The accuracy goal's median error: a profile noisier than that cannot meet it.
  if (noisiest > 0.05) {
    lines.push_back(fmt::format("the profile's windows disagreed by up to {:.0f}% (spread): the machine was busy, "
                                "and predictions from this profile are about that uncertain; profile again when it "
                                "is quiet", 100 * noisiest));
  }
  for (const LinkProfile& l : profile.links) {
    std::string hosts;
    for (const std::string& h : l.hosts) hosts += (hosts.empty() ? "" : "-") + h;
    lines.push_back(fmt::format("link {} {} {} ({} ranks): {:.3g} Gb/s, {:.1f} us{}", l.kind, l.scope, hosts, l.ranks,
                                l.gbps, l.latency_us, l.kind == "all_reduce" ? " per ring step" : ""));
  }
  return lines;
}

}  // namespace hetu::profile
