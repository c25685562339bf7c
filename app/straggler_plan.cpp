// Straggler re-planning with the cost model. See straggler_plan.h.
#include "app/straggler_plan.h"

#include <fmt/core.h>

#include <map>
#include <utility>
#include <vector>

#include "app/compute_device.h"
#include "app/config/device_spec.h"
#include "app/device_emulation.h"
#include "app/layout_cost.h"
#include "app/layout_search.h"
#include "lib/plan/layout_search.h"
#include "lib/util/error.h"

namespace hetu::app {
namespace {

// Each device's position in node order (how the layout search numbers devices).
std::map<config::DeviceId, int64_t> device_positions(const config::JobConfig& c) {
  std::map<config::DeviceId, int64_t> out;
  int64_t next = 0;
  for (const config::NodeSection& node : c.cluster.nodes)
    for (int64_t i = 0; i < node.count; ++i) out[{node.host, i}] = next++;
  return out;
}

// The job's [parallel] groups as the layout search writes layouts; throws UsageError when
// they are not such a layout.
plan::SearchedLayout searched_layout(const config::JobConfig& c) {
  const std::map<config::DeviceId, int64_t> position = device_positions(c);
  plan::SearchedLayout out;
  auto refuse = [&](const std::string& why) {
    HT_USAGE_ERROR("{}: straggler.enabled: the layout must be one the planner writes ({}); plan it with [parallel] "
                   "auto = true or hetu plan", c.source, why);
  };
  for (size_t r = 0; r < c.parallel.replicas.size(); ++r) {
    const config::ReplicaSection& replica = c.parallel.replicas[r];
    if (replica.schedule != c.parallel.replicas[0].schedule) refuse("one schedule for every replica");
    if (replica.micro_batch != c.training.micro_batch) refuse("every replica's micro_batch is training.micro_batch");
    plan::SearchedReplica searched;
    searched.micro_batches = c.replica_micro_batches(r);
    for (const config::StageSection& stage : replica.stages) {
      const int64_t first = position.at(stage.devices[0]);
      for (size_t d = 0; d < stage.devices.size(); ++d) {
        if (position.at(stage.devices[d]) != first + static_cast<int64_t>(d)) {
          refuse(fmt::format("stage devices {} are not consecutive in node order", format_device_list(stage.devices)));
        }
      }
      searched.stages.push_back({first, stage.tp(), stage.layers.first, stage.layers.last});
    }
    out.replicas.push_back(std::move(searched));
  }
  out.schedule = c.parallel.replicas[0].schedule == config::PipelineSchedule::gpipe ? pipeline::ScheduleKind::gpipe
                                                                                    : pipeline::ScheduleKind::one_f_one_b;
  return out;
}

bool same_layout(const plan::SearchedLayout& a, const plan::SearchedLayout& b) {
  if (a.schedule != b.schedule || a.replicas.size() != b.replicas.size()) return false;
  for (size_t r = 0; r < a.replicas.size(); ++r) {
    const plan::SearchedReplica& x = a.replicas[r];
    const plan::SearchedReplica& y = b.replicas[r];
    if (x.micro_batches != y.micro_batches || x.stages.size() != y.stages.size()) return false;
    for (size_t s = 0; s < x.stages.size(); ++s) {
      const plan::SearchedStage& p = x.stages[s];
      const plan::SearchedStage& q = y.stages[s];
      if (p.first_device != q.first_device || p.devices != q.devices || p.first_layer != q.first_layer ||
          p.last_layer != q.last_layer) {
        return false;
      }
    }
  }
  return true;
}

// A device type computing `factor` times slower: its rates divided, its measured times multiplied.
plan::SearchDeviceType slowed(plan::SearchDeviceType type, double factor) {
  type.name += fmt::format(" (x{:.3f})", factor);
  type.rates.flops_per_s /= factor;
  type.rates.memory_bytes_per_s /= factor;
  if (type.rates.measured) {
    plan::MeasuredTimes& m = *type.rates.measured;
    for (double* t : {&m.layer_forward_s, &m.layer_backward_s, &m.first_forward_s, &m.first_backward_s,
                      &m.last_forward_s, &m.last_backward_s, &m.optimizer_s}) {
      *t *= factor;
    }
  }
  return type;
}

class CostModelPlanner final : public runtime::StragglerPlanner {
 public:
  CostModelPlanner(const config::LoadedConfig& loaded, Profile profile, const RankMap& ranks, BuildStrategyRun build)
      : loaded_(loaded), profile_(std::move(profile)), build_(std::move(build)) {
    loaded_.config.straggler = {};  // the jobs it plans are explicit layouts, without the launch's profile
    const std::map<config::DeviceId, int64_t> position = device_positions(loaded_.config);
    for (const config::DeviceId& device : ranks.device_of_rank) position_of_rank_.push_back(position.at(device));
    base_ = search_cluster(loaded_, profile_);
    job_ = search_job(loaded_);
    current_ = searched_layout(loaded_.config);
  }

  std::vector<double> expected_compute(const std::vector<double>& slowdown) override {
    const plan::SearchedLayout priced = plan::price_layout(cluster_at(slowdown), job_, current_.schedule, current_.replicas);
    std::vector<double> out(position_of_rank_.size(), 0.0);
    for (size_t rank = 0; rank < out.size(); ++rank) {
      const int64_t d = position_of_rank_[rank];
      for (size_t r = 0; r < priced.replicas.size(); ++r) {
        for (size_t s = 0; s < priced.replicas[r].stages.size(); ++s) {
          const plan::SearchedStage& stage = priced.replicas[r].stages[s];
          if (d < stage.first_device || d >= stage.first_device + stage.devices) continue;
          const plan::StageCost& cost = priced.costs[r].stages[s];
          out[rank] = static_cast<double>(priced.costs[r].micro_batches) * (cost.times.forward_s + cost.times.backward_s) +
                      cost.optimizer_s;
        }
      }
    }
    return out;
  }

  Plan replan(const std::vector<double>& slowdown) override {
    const plan::SearchCluster cluster = cluster_at(slowdown);
    const plan::SearchedLayout now = plan::price_layout(cluster, job_, current_.schedule, current_.replicas);
    Plan plan;
    plan.current_step_s = now.prediction.step_s;
    const plan::SearchResult found = plan::search_layouts(cluster, job_, {.top = 1});
    if (found.best.empty() || !found.best[0].fits) {
      plan.planned_step_s = now.prediction.step_s;
      plan.summary = "no layout fits the devices' memory";
      return plan;
    }
    const plan::SearchedLayout& best = found.best[0];
    const PlannedLayout planned = planned_layout(loaded_, best, profile_);
    plan.planned_step_s = best.prediction.step_s;
    plan.changes_layout = !same_layout(best, current_);
    plan.summary = planned.summary;
    auto job = std::make_shared<const config::JobConfig>(planned.job);
    const std::string name = fmt::format("straggler-{}", switches_ + 1);
    plan.enter = [this, job, name] { return build_(name, *job); };
    pending_ = {best, job};
    return plan;
  }

  void adopt(const Plan& plan) override {
    HT_CHECK(plan.changes_layout && pending_.second != nullptr, "straggler: adopting a plan that changes nothing");
    current_ = pending_.first;
    loaded_.config = *pending_.second;
    jobs_.push_back(pending_.second);  // the runs built from it keep referring to it
    ++switches_;
  }

 private:
  // The search cluster with the device at each rank's position `slowdown[rank]` times slower;
  // a run of alike factors on one node stays one node part (links as the node's).
  plan::SearchCluster cluster_at(const std::vector<double>& slowdown) const {
    std::vector<double> factor;  // per device position
    for (const plan::SearchNode& node : base_.nodes) factor.insert(factor.end(), static_cast<size_t>(node.devices), 1.0);
    for (size_t rank = 0; rank < position_of_rank_.size() && rank < slowdown.size(); ++rank)
      factor[static_cast<size_t>(position_of_rank_[rank])] = slowdown[rank];
    plan::SearchCluster out;
    out.types = base_.types;
    std::map<std::pair<int64_t, double>, int64_t> slowed_types;  // (type, factor) -> index
    std::vector<size_t> origin;  // per part, its node in base_
    size_t d = 0;
    for (size_t n = 0; n < base_.nodes.size(); ++n) {
      const plan::SearchNode& node = base_.nodes[n];
      for (int64_t i = 0; i < node.devices;) {
        const double f = factor[d];
        int64_t run = 0;
        while (i + run < node.devices && factor[d + static_cast<size_t>(run)] == f) ++run;
        int64_t type = node.type;
        if (f != 1) {
          auto [it, added] = slowed_types.emplace(std::pair{node.type, f}, static_cast<int64_t>(out.types.size()));
          if (added) out.types.push_back(slowed(base_.types[static_cast<size_t>(node.type)], f));
          type = it->second;
        }
        out.nodes.push_back({type, run});
        origin.push_back(n);
        i += run;
        d += static_cast<size_t>(run);
      }
    }
    for (size_t a : origin) {
      out.links.emplace_back();
      for (size_t b : origin) out.links.back().push_back(base_.links[a][b]);
    }
    return out;
  }

  config::LoadedConfig loaded_;  // the current layout
  Profile profile_;
  BuildStrategyRun build_;
  std::vector<int64_t> position_of_rank_;
  plan::SearchCluster base_;
  plan::SearchJob job_;
  plan::SearchedLayout current_;
  std::pair<plan::SearchedLayout, std::shared_ptr<const config::JobConfig>> pending_;  // the last re-plan's
  std::vector<std::shared_ptr<const config::JobConfig>> jobs_;
  int64_t switches_ = 0;
};

}  // namespace

void check_straggler_job(const config::LoadedConfig& loaded) {
  const config::JobConfig& c = loaded.config;
  for (const config::NodeSection& node : c.cluster.nodes) {
    const DeviceProfile* type = loaded.catalog.find(node.device_type);
    HT_USAGE_CHECK(type == nullptr || type->kind == DeviceKind::cpu, "{}: straggler.enabled: node {} has GPU devices "
                   "({}); straggler re-planning measures compute on CPU devices only so far", c.source, node.host,
                   node.device_type);
  }
  searched_layout(c);
}

std::shared_ptr<runtime::StragglerWatch> make_straggler_watch(const config::LoadedConfig& loaded, const Profile& profile,
                                                              const RankMap& ranks, Communicator& host_comm,
                                                              BuildStrategyRun build) {
  const config::StragglerSection& s = loaded.config.straggler;
  HT_CHECK(emulated_compute_s(host_comm).has_value(), "straggler: the host communicator does not measure compute");
  auto planner = std::make_unique<CostModelPlanner>(loaded, profile, ranks, std::move(build));
  return std::make_shared<runtime::StragglerWatch>(runtime::StragglerOptions{s.threshold, s.window, s.min_gain},
                                                   &host_comm, [&host_comm] { return *emulated_compute_s(host_comm); },
                                                   std::move(planner));
}

}  // namespace hetu::app
