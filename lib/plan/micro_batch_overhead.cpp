// micro_batch_overhead: a micro-batch's fixed cost per stage, from the profile and the links.
#include "lib/plan/micro_batch_overhead.h"

#include <algorithm>
#include <set>

#include "lib/plan/model_facts.h"
#include "lib/util/error.h"

namespace hetu::plan {

std::optional<MicroBatchFit> micro_batch_intercepts(const profile::Profile& profile, const std::string& type, int64_t tp,
                                                    int64_t seq_len) {
  std::vector<const profile::DeviceTypeProfile*> entries;
  std::set<int64_t> sizes;
  for (const profile::DeviceTypeProfile& p : profile.devices) {
    if (p.device_type != type || p.tp != tp || p.seq_len != seq_len) continue;
    entries.push_back(&p);
    sizes.insert(p.micro_batch);
  }
  if (sizes.size() < 2) return std::nullopt;
  double mean_x = 0;
  for (const profile::DeviceTypeProfile* p : entries) mean_x += static_cast<double>(p->micro_batch);
  mean_x /= static_cast<double>(entries.size());
  double sxx = 0;
  for (const profile::DeviceTypeProfile* p : entries) {
    const double dx = static_cast<double>(p->micro_batch) - mean_x;
    sxx += dx * dx;
  }
  // Least squares of one column: the intercept, held at 0 or more (a noisy fit may go below).
  auto intercept = [&](double profile::DeviceTypeProfile::*column) {
    double mean_y = 0, sxy = 0;
    for (const profile::DeviceTypeProfile* p : entries) mean_y += p->*column;
    mean_y /= static_cast<double>(entries.size());
    for (const profile::DeviceTypeProfile* p : entries) sxy += (static_cast<double>(p->micro_batch) - mean_x) * (p->*column - mean_y);
    return std::max(0.0, mean_y - sxy / sxx * mean_x);
  };
  MicroBatchFit fit;
  fit.layer_forward_s = intercept(&profile::DeviceTypeProfile::layer_forward_s);
  fit.layer_backward_s = intercept(&profile::DeviceTypeProfile::layer_backward_s);
  fit.embed_forward_s = intercept(&profile::DeviceTypeProfile::embed_forward_s);
  fit.embed_backward_s = intercept(&profile::DeviceTypeProfile::embed_backward_s);
  fit.head_forward_s = intercept(&profile::DeviceTypeProfile::head_forward_s);
  fit.head_backward_s = intercept(&profile::DeviceTypeProfile::head_backward_s);
  return fit;
}

std::vector<std::vector<plan::StageTimes>> micro_batch_overhead(const config::LoadedConfig& loaded,
                                                                const profile::Profile& profile,
                                                                const LayoutEstimate& estimate) {
  const config::JobConfig& c = loaded.config;
  const int64_t all_reduces = model_facts(c.model, c.training.seq_len, 4).tp_all_reduces_per_layer;
  HT_CHECK(estimate.stages.size() == estimate.replicas.size(), "micro-batch overhead: {} replicas' stages for {} costs",
           estimate.stages.size(), estimate.replicas.size());
  std::vector<std::vector<plan::StageTimes>> out;
  for (size_t r = 0; r < estimate.stages.size(); ++r) {
    const std::vector<StageEstimateInfo>& stages = estimate.stages[r];
    out.emplace_back();
    for (size_t s = 0; s < stages.size(); ++s) {
      const StageEstimateInfo& info = stages[s];
      const plan::StageCost& cost = estimate.replicas[r].stages.at(s);
      const double layers = static_cast<double>(info.last_layer - info.first_layer + 1);
      const bool first = s == 0, last = s + 1 == stages.size();
      plan::StageTimes fixed;
      std::optional<MicroBatchFit> fit;
      bool fit_holds_tp = false;  // measured on a rank of a tp group of the stage's size: its collectives in it
      if (info.measured) {
        fit = micro_batch_intercepts(profile, info.device_type, info.tp, c.training.seq_len);
        fit_holds_tp = fit.has_value() && info.tp > 1;
        if (!fit && info.tp > 1) fit = micro_batch_intercepts(profile, info.device_type, 1, c.training.seq_len);
      }
      if (fit) {
        fixed.forward_s = layers * fit->layer_forward_s + (first ? fit->embed_forward_s : 0.0) +
                          (last ? fit->head_forward_s : 0.0);
        fixed.backward_s = layers * fit->layer_backward_s + (first ? fit->embed_backward_s : 0.0) +
                           (last ? fit->head_backward_s : 0.0);
      }
      if (info.tp > 1 && !fit_holds_tp) {  // a ring all_reduce: 2 (tp - 1) messages, each its latency
        const double latency = layers * static_cast<double>(all_reduces) * 2.0 * static_cast<double>(info.tp - 1) *
                               info.tp_latency_s;
        fixed.forward_s += latency;
        fixed.backward_s += latency;
      }
      fixed.send_s = info.send_latency_s;
      fixed.forward_s = std::min(fixed.forward_s, cost.times.forward_s - cost.attention_forward_s);
      fixed.backward_s = std::min(fixed.backward_s, cost.times.backward_s - cost.attention_backward_s);
      fixed.send_s = std::min(fixed.send_s, cost.times.send_s);
      out.back().push_back(fixed);
    }
  }
  return out;
}

}  // namespace hetu::plan
