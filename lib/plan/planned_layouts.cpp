// The layouts of `hetu plan`: the layout search's, turned into job files, and the exhaustive
// listing. See Note [Exhaustive layout search].
#include "lib/plan/planned_layouts.h"

#include <fmt/core.h>

#include <algorithm>
#include <functional>

#include "lib/config/device_spec.h"
#include "lib/util/error.h"

namespace hetu::plan {
namespace {

// Note [Exhaustive layout search]: the space is every way to cut the cluster's devices, in
// node order, into consecutive replicas; each replica's devices into consecutive pipeline
// stages (a stage's device count is its tp); each replica's layers into consecutive ranges,
// one per stage; the global batch into whole micro-batches of training.micro_batch per
// replica (its batch share); and one schedule (GPipe or 1F1B) for all replicas. Devices stay
// in node order because devices of one type on one node are interchangeable, so permuting
// them only repeats layouts. A candidate is kept when it loads as a job file (tp divides the
// heads and the padded vocabulary, ...); each is priced by estimate_layout.

// Every way to write n as an ordered sum of `parts` positive integers (parts = 0: any count).
void compositions(int64_t n, int64_t parts, const std::function<void(const std::vector<int64_t>&)>& fn) {
  std::vector<int64_t> current;
  std::function<void(int64_t)> go = [&](int64_t left) {
    if (left == 0) {
      if (parts == 0 || static_cast<int64_t>(current.size()) == parts) fn(current);
      return;
    }
    if (parts != 0 && static_cast<int64_t>(current.size()) >= parts) return;
    for (int64_t k = 1; k <= left; ++k) {
      current.push_back(k);
      go(left - k);
      current.pop_back();
    }
  };
  go(n);
}

int64_t count_compositions(int64_t n, int64_t parts) {
  int64_t count = 0;
  compositions(n, parts, [&](const std::vector<int64_t>&) { ++count; });
  return count;
}

// One replica's shape: its stages' device counts and layer counts.
struct ReplicaShape {
  std::vector<int64_t> tps;
  std::vector<int64_t> layers;
};

std::vector<ReplicaShape> replica_shapes(int64_t devices, int64_t layers) {
  std::vector<ReplicaShape> shapes;
  compositions(devices, 0, [&](const std::vector<int64_t>& tps) {
    if (static_cast<int64_t>(tps.size()) > layers) return;
    compositions(layers, static_cast<int64_t>(tps.size()),
                 [&](const std::vector<int64_t>& split) { shapes.push_back({tps, split}); });
  });
  return shapes;
}

std::string summarize(const config::JobConfig& c) {
  std::string out;
  for (size_t r = 0; r < c.parallel.replicas.size(); ++r) {
    const config::ReplicaSection& replica = c.parallel.replicas[r];
    if (r > 0) out += " | ";
    for (size_t s = 0; s < replica.stages.size(); ++s) {
      const config::StageSection& stage = replica.stages[s];
      if (s > 0) out += " -> ";
      out += fmt::format("{} L{}-{}", format_device_list(stage.devices), stage.layers.first, stage.layers.last);
    }
    out += fmt::format(" x{}", c.replica_batch(r));
  }
  return out + fmt::format(" ({})", to_string(c.parallel.replicas[0].schedule));
}

bool is_uniform(const config::JobConfig& c) {
  const config::ReplicaSection& first = c.parallel.replicas[0];
  for (const config::ReplicaSection& replica : c.parallel.replicas) {
    if (replica.batch_share != first.batch_share || replica.stages.size() != first.stages.size()) return false;
    for (size_t s = 0; s < replica.stages.size(); ++s) {
      if (replica.stages[s].tp() != first.stages[s].tp() || replica.stages[s].layers != first.stages[s].layers ||
          replica.stages[s].tp() != first.stages[0].tp()) {
        return false;
      }
    }
  }
  // The shorthand splits layers as evenly as possible, extra layers to the first stages.
  const int64_t pp = static_cast<int64_t>(first.stages.size()), layers = c.model.layers;
  for (int64_t s = 0; s < pp; ++s) {
    if (first.stages[static_cast<size_t>(s)].layers.count() != layers / pp + (s < layers % pp ? 1 : 0)) return false;
  }
  return true;
}

// A valid job's layout priced by estimate_layout, with its fit, uniformity and summary.
PlannedLayout priced(const config::LoadedConfig& candidate, const profile::Profile& profile) {
  PlannedLayout planned;
  planned.job = candidate.config;
  planned.estimate = estimate_layout(candidate, profile);
  const plan::LayoutPrediction& p = planned.estimate.prediction;
  for (size_t r = 0; r < planned.estimate.stages.size(); ++r)
    for (size_t s = 0; s < planned.estimate.stages[r].size(); ++s) {
      const double memory = planned.estimate.stages[r][s].memory_bytes;
      if (memory > 0 && p.peak_bytes[r][s] > memory) planned.fits = false;
    }
  planned.uniform = is_uniform(planned.job);
  planned.summary = summarize(planned.job);
  return planned;
}

std::vector<config::DeviceId> devices_in_node_order(const config::JobConfig& c) {
  std::vector<config::DeviceId> devices;
  for (const config::NodeSection& node : c.cluster.nodes)
    for (int64_t i = 0; i < node.count; ++i) devices.push_back({node.host, i});
  return devices;
}

}  // namespace

PlannedLayout planned_layout(const config::LoadedConfig& loaded, const plan::SearchedLayout& layout,
                             const profile::Profile& profile) {
  const std::vector<config::DeviceId> devices = devices_in_node_order(loaded.config);
  config::LoadedConfig candidate = loaded;
  candidate.config.parallel.shorthand.reset();
  candidate.config.parallel.replicas.clear();
  candidate.config.parallel.auto_plan = false;  // an explicit layout
  candidate.config.parallel.profile.clear();
  for (const plan::SearchedReplica& searched : layout.replicas) {
    config::ReplicaSection replica;
    replica.batch_share = static_cast<double>(searched.micro_batches);
    replica.micro_batch = loaded.config.training.micro_batch;
    replica.schedule = layout.schedule == pipeline::ScheduleKind::gpipe ? config::PipelineSchedule::gpipe
                                                                       : config::PipelineSchedule::one_f_one_b;
    for (const plan::SearchedStage& s : searched.stages) {
      config::StageSection stage;
      for (int64_t d = s.first_device; d < s.first_device + s.devices; ++d)
        stage.devices.push_back(devices[static_cast<size_t>(d)]);
      stage.layers = {s.first_layer, s.last_layer};
      replica.stages.push_back(std::move(stage));
    }
    candidate.config.parallel.replicas.push_back(std::move(replica));
  }
  try {
    config::load_job_config_text(config::to_toml(candidate.config), loaded.config.source, {});
  } catch (const UsageError& e) {
    HT_THROW("hetu plan: the layout search proposed a layout the job-file rules refuse: {}", e.what());
  }
  return priced(candidate, profile);
}

PlanResult plan_layouts(const config::LoadedConfig& loaded, const profile::Profile& profile, int64_t top,
                        int64_t exact_devices) {
  const plan::SearchResult found = plan::search_layouts(search_cluster(loaded, profile), search_job(loaded),
                                                        {.top = std::max<int64_t>(1, top), .exact_devices = exact_devices});
  PlanResult result;
  result.exact = found.exact;
  result.layouts_priced = found.layouts_priced;
  for (const plan::SearchedLayout& layout : found.best) result.ranked.push_back(planned_layout(loaded, layout, profile));
  const bool has_uniform = std::any_of(result.ranked.begin(), result.ranked.end(), [](const PlannedLayout& l) { return l.uniform; });
  if (found.uniform && !has_uniform) result.ranked.push_back(planned_layout(loaded, *found.uniform, profile));
  return result;
}

std::vector<PlannedLayout> enumerate_layouts(const config::LoadedConfig& loaded,
                                             const profile::Profile& profile) {
  const config::JobConfig& c = loaded.config;
  const std::vector<config::DeviceId> devices = devices_in_node_order(c);
  const int64_t n = static_cast<int64_t>(devices.size());
  const int64_t mb = c.training.micro_batch;
  HT_USAGE_CHECK(c.training.global_batch % mb == 0, "hetu plan: training.global_batch = {} is not a multiple of "
                 "training.micro_batch = {}", c.training.global_batch, mb);
  const int64_t units = c.training.global_batch / mb;

  // Count first, so that a space too large is refused before any work.
  int64_t total = 0;
  compositions(n, 0, [&](const std::vector<int64_t>& sizes) {
    if (static_cast<int64_t>(sizes.size()) > units) return;
    int64_t product = 2 * count_compositions(units, static_cast<int64_t>(sizes.size()));
    for (int64_t size : sizes) product *= static_cast<int64_t>(replica_shapes(size, c.model.layers).size());
    total += product;
  });
  HT_USAGE_CHECK(total <= kMaxExhaustiveCandidates, "hetu plan: {} candidate layouts for {} devices exceed the "
                 "exhaustive listing's limit of {} (hetu plan without --exhaustive searches any size)", total, n,
                 kMaxExhaustiveCandidates);

  std::vector<PlannedLayout> found;
  config::LoadedConfig candidate = loaded;
  candidate.config.parallel.shorthand.reset();
  candidate.config.parallel.auto_plan = false;  // each candidate is an explicit layout
  candidate.config.parallel.profile.clear();
  compositions(n, 0, [&](const std::vector<int64_t>& sizes) {
    const size_t num_replicas = sizes.size();
    if (static_cast<int64_t>(num_replicas) > units) return;
    std::vector<std::vector<ReplicaShape>> shapes;
    for (int64_t size : sizes) shapes.push_back(replica_shapes(size, c.model.layers));
    std::vector<size_t> pick(num_replicas, 0);
    std::function<void(size_t)> choose = [&](size_t r) {
      if (r < num_replicas) {
        for (pick[r] = 0; pick[r] < shapes[r].size(); ++pick[r]) choose(r + 1);
        return;
      }
      compositions(units, static_cast<int64_t>(num_replicas), [&](const std::vector<int64_t>& shares) {
        for (config::PipelineSchedule schedule : {config::PipelineSchedule::one_f_one_b, config::PipelineSchedule::gpipe}) {
          std::vector<config::ReplicaSection> replicas;
          size_t next_device = 0;
          for (size_t i = 0; i < num_replicas; ++i) {
            const ReplicaShape& shape = shapes[i][pick[i]];
            config::ReplicaSection replica;
            replica.batch_share = static_cast<double>(shares[i]);
            replica.micro_batch = mb;
            replica.schedule = schedule;
            int64_t layer = 0;
            for (size_t s = 0; s < shape.tps.size(); ++s) {
              config::StageSection stage;
              for (int64_t k = 0; k < shape.tps[s]; ++k) stage.devices.push_back(devices[next_device++]);
              stage.layers = {layer, layer + shape.layers[s] - 1};
              layer += shape.layers[s];
              replica.stages.push_back(std::move(stage));
            }
            replicas.push_back(std::move(replica));
          }
          candidate.config.parallel.replicas = std::move(replicas);
          try {  // the job-file rules decide validity (tp divides heads, ...)
            config::load_job_config_text(config::to_toml(candidate.config), c.source, {});
          } catch (const UsageError&) {
            continue;
          }
          found.push_back(priced(candidate, profile));
        }
      });
    };
    choose(0);
  });
  std::stable_sort(found.begin(), found.end(), [](const PlannedLayout& a, const PlannedLayout& b) {
    if (a.fits != b.fits) return a.fits;
    return a.estimate.prediction.step_s < b.estimate.prediction.step_s;
  });
  return found;
}

}  // namespace hetu::plan
