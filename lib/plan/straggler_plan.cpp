// Straggler re-planning with the cost model. See straggler_plan.h.
#include "lib/plan/straggler_plan.h"

#include <fmt/core.h>

#include <cstdlib>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/config/compute_device.h"
#include "lib/config/device_spec.h"
#include "lib/emulation/device_emulation.h"
#include "lib/plan/layout_cost.h"
#include "lib/plan/layout_search.h"
#include "lib/plan/planned_layouts.h"
#include "lib/util/error.h"

namespace hetu::plan {
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
  auto slow = [factor](plan::MeasuredTimes& m) {
    for (double* t : {&m.layer_forward_s, &m.layer_backward_s, &m.first_forward_s, &m.first_backward_s,
                      &m.last_forward_s, &m.last_backward_s, &m.optimizer_s}) {
      *t *= factor;
    }
  };
  if (type.rates.measured) slow(*type.rates.measured);
  for (plan::SearchDeviceType::AtTp& at : type.measured_at_tp) slow(at.times);
  return type;
}

class CostModelPlanner final : public runtime::StragglerPlanner {
 public:
  CostModelPlanner(const config::LoadedConfig& loaded, profile::Profile profile, const launch::RankMap& ranks, BuildStrategyRun build)
      : loaded_(loaded), profile_(std::move(profile)), build_(std::move(build)) {
    loaded_.config.straggler = {};  // the jobs it plans are explicit layouts, without the launch's profile
    const std::map<config::DeviceId, int64_t> position = device_positions(loaded_.config);
    for (const config::DeviceId& device : ranks.device_of_rank) position_of_rank_.push_back(position.at(device));
    base_ = search_cluster(loaded_, profile_);
    job_ = search_job(loaded_);
    current_ = searched_layout(loaded_.config);
  }

  // Per rank, its own compute: a rank of a tp group of unlike devices (another type, or
  // another slowdown) is priced as if every member were its own device, since what it
  // measures is its own compute, not the wait inside each collective for the slowest member
  // (which the stage's time, priced at that member's pace, includes). Note [Straggler decisions].
  std::vector<double> expected_compute(const std::vector<double>& slowdown) override {
    const std::vector<DeviceSpeed> speed = speeds_at(slowdown);
    const plan::SearchedLayout priced = price(speed);
    std::vector<double> out(position_of_rank_.size(), 0.0);
    for (size_t rank = 0; rank < out.size(); ++rank) {
      const int64_t d = position_of_rank_[rank];
      for (size_t r = 0; r < priced.replicas.size(); ++r) {
        for (size_t s = 0; s < priced.replicas[r].stages.size(); ++s) {
          const plan::SearchedStage& stage = priced.replicas[r].stages[s];
          if (d < stage.first_device || d >= stage.first_device + stage.devices) continue;
          std::vector<DeviceSpeed> own = speed;
          for (int64_t i = stage.first_device; i < stage.first_device + stage.devices; ++i)
            own[static_cast<size_t>(i)] = speed[static_cast<size_t>(d)];
          const bool alike = own == speed;
          const plan::SearchedLayout priced_own = alike ? plan::SearchedLayout{} : price(own);
          const plan::SearchedLayout& p = alike ? priced : priced_own;
          const plan::StageCost& cost = p.costs[r].stages[s];
          out[rank] = static_cast<double>(p.costs[r].micro_batches) * (cost.times.forward_s + cost.times.backward_s) +
                      cost.optimizer_s;
        }
      }
    }
    return out;
  }

  Plan replan(const std::vector<double>& slowdown) override {
    const plan::SearchCluster cluster = cluster_of(speeds_at(slowdown));
    const plan::SearchedLayout now = plan::price_layout(cluster, job_, current_.schedule, current_.replicas);
    Plan plan;
    plan.current_step_s = now.prediction.step_s;
    const bool force_cross_node_tp = test_forces_cross_node_tp();
    const plan::SearchResult found = plan::search_layouts(cluster, job_, {.top = force_cross_node_tp ? 4096 : 1});
    size_t pick = 0;
    while (force_cross_node_tp && pick < found.best.size() && !pairs_across_nodes(found.best[pick])) ++pick;
    if (pick == found.best.size() || !found.best[pick].fits) {
      plan.planned_step_s = now.prediction.step_s;
      plan.summary = "no layout fits the devices' memory";
      return plan;
    }
    const plan::SearchedLayout& best = found.best[pick];
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
  // Test only (tests/e2e/straggler.sh): HETU_TEST_STRAGGLER_PLAN=tp-across-nodes makes every
  // re-plan take the best layout with a tp group over two nodes (a normal device paired with
  // the straggler), the layout whose prediction once went wrong (Note [Straggler decisions]).
  static bool test_forces_cross_node_tp() {
    const char* v = std::getenv("HETU_TEST_STRAGGLER_PLAN");
    return v != nullptr && std::string_view(v) == "tp-across-nodes";
  }

  // True when some replica is one stage whose tp group spans two nodes (and no replica is a
  // pipeline): the failed run's shape; a pipeline around the pair can be predicted slower than
  // staying put under load, and then the forced run would not switch at all.
  bool pairs_across_nodes(const plan::SearchedLayout& layout) const {
    for (const plan::SearchedReplica& replica : layout.replicas)
      if (replica.stages.size() != 1) return false;
    return spans_nodes(layout);
  }

  bool spans_nodes(const plan::SearchedLayout& layout) const {
    std::vector<int64_t> node_of;  // per device position
    for (size_t n = 0; n < base_.nodes.size(); ++n) node_of.insert(node_of.end(), static_cast<size_t>(base_.nodes[n].devices), static_cast<int64_t>(n));
    for (const plan::SearchedReplica& replica : layout.replicas)
      for (const plan::SearchedStage& stage : replica.stages)
        if (node_of[static_cast<size_t>(stage.first_device)] != node_of[static_cast<size_t>(stage.first_device + stage.devices - 1)]) return true;
    return false;
  }

  // A device's type (an index into base_.types) and how many times slower it computes.
  struct DeviceSpeed {
    int64_t type = 0;
    double factor = 1;
    bool operator==(const DeviceSpeed&) const = default;
  };

  // Per device position: its node's type, slowed by `slowdown[rank]` at each rank's position.
  std::vector<DeviceSpeed> speeds_at(const std::vector<double>& slowdown) const {
    std::vector<DeviceSpeed> out;
    for (const plan::SearchNode& node : base_.nodes) out.insert(out.end(), static_cast<size_t>(node.devices), {node.type, 1.0});
    for (size_t rank = 0; rank < position_of_rank_.size() && rank < slowdown.size(); ++rank)
      out[static_cast<size_t>(position_of_rank_[rank])].factor = slowdown[rank];
    return out;
  }

  plan::SearchedLayout price(const std::vector<DeviceSpeed>& speed) const {
    return plan::price_layout(cluster_of(speed), job_, current_.schedule, current_.replicas);
  }

  // The search cluster of devices at `speed`: a run of alike devices on one node stays one
  // node part (links as the node's), so one slowed device among alike ones is priced alone.
  plan::SearchCluster cluster_of(const std::vector<DeviceSpeed>& speed) const {
    plan::SearchCluster out;
    out.types = base_.types;
    std::map<std::pair<int64_t, double>, int64_t> slowed_types;  // (type, factor) -> index
    std::vector<size_t> origin;  // per part, its node in base_
    size_t d = 0;
    for (size_t n = 0; n < base_.nodes.size(); ++n) {
      const plan::SearchNode& node = base_.nodes[n];
      for (int64_t i = 0; i < node.devices;) {
        const DeviceSpeed here = speed[d];
        int64_t run = 0;
        while (i + run < node.devices && speed[d + static_cast<size_t>(run)] == here) ++run;
        int64_t type = here.type;
        if (here.factor != 1) {
          auto [it, added] = slowed_types.emplace(std::pair{here.type, here.factor}, static_cast<int64_t>(out.types.size()));
          if (added) out.types.push_back(slowed(base_.types[static_cast<size_t>(here.type)], here.factor));
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
  profile::Profile profile_;
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
    const config::DeviceProfile* type = loaded.catalog.find(node.device_type);
    HT_USAGE_CHECK(type == nullptr || type->kind == config::DeviceKind::cpu, "{}: straggler.enabled: node {} has GPU devices "
                   "({}); straggler re-planning measures compute on CPU devices only so far", c.source, node.host,
                   node.device_type);
  }
  searched_layout(c);
}

std::shared_ptr<runtime::StragglerWatch> make_straggler_watch(const config::LoadedConfig& loaded, const profile::Profile& profile,
                                                              const launch::RankMap& ranks, Communicator& host_comm,
                                                              BuildStrategyRun build) {
  const config::StragglerSection& s = loaded.config.straggler;
  HT_CHECK(emulation::emulated_compute_s(host_comm).has_value(), "straggler: the host communicator does not measure compute");
  auto planner = std::make_unique<CostModelPlanner>(loaded, profile, ranks, std::move(build));
  return std::make_shared<runtime::StragglerWatch>(runtime::StragglerOptions{s.threshold, s.window, s.min_gain},
                                                   &host_comm, [&host_comm] { return *emulation::emulated_compute_s(host_comm); },
                                                   std::move(planner));
}

}  // namespace hetu::plan
