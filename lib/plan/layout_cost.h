// A job's own layout priced by the cost model (lib/plan) from catalogue estimates: each
// stage's device rates (a stated share of the catalogue peak in the job's precision; memory
// bandwidth; links within and between nodes, the emulated ones where a node sets them) and
// the model's facts (lib/plan/model_facts.h). An emulated CPU type's catalogue peak is its
// emulated peak (the host CPU's divided by emulate_slowdown, as the catalogue file states it).
//
//   LayoutEstimate e = estimate_layout(loaded);
//   e.prediction.step_s;  e.stages[r][s].device_type;
#pragma once

#include <string>
#include <vector>

#include "lib/config/config.h"
#include "lib/plan/cost_model.h"
#include "lib/plan/layout_search.h"
#include "lib/profile/profile_file.h"

namespace hetu::plan {

// Stated assumptions of the catalogue estimate (docs/config.md, `hetu plan`).
inline constexpr double kGpuEfficiency = 0.45;  // sustained share of the catalogue peak
inline constexpr double kCpuEfficiency = 0.5;

struct StageEstimateInfo {
  bool measured = false;     // compute from the profile, not the catalogue
  std::string devices;       // "gpu-a:0-3"
  std::string device_type;   // the catalogue type of its slowest device (a tp group runs at its pace)
  double memory_bytes = 0;   // per device, the smallest of its devices; 0: unbounded
  int64_t first_layer = 0, last_layer = 0, tp = 1;
  // The latency of each message of its tp collectives and of its send to the next stage (0:
  // none), the part of a micro-batch's time no shorter rows save (lib/plan/micro_batch_overhead.h).
  double tp_latency_s = 0, send_latency_s = 0;
};

struct LayoutEstimate {
  std::vector<plan::ReplicaCost> replicas;
  std::vector<std::vector<StageEstimateInfo>> stages;  // [replica][stage]
  plan::LayoutPrediction prediction;
  double tokens_per_step = 0;
  double flops_per_token = 0;  // forward + backward, the MFU numerator's
  double peak_flops = 0;       // sum of every device's catalogue peak in the job's precision
};

// `profiles`: measured device types (hetu profile); the others are estimated from the catalogue.
// `links`: measured link curves (a profile's [[link]] tables); the others are assumed.
LayoutEstimate estimate_layout(const config::LoadedConfig& loaded, const profile::Profile& profile = {});

// The job's cluster and model as the layout search (lib/plan/layout_search.h) sees them, priced
// the way estimate_layout prices a layout: the same rates per type and links per pair of nodes.
plan::SearchCluster search_cluster(const config::LoadedConfig& loaded, const profile::Profile& profile = {});
// Throws UsageError when training.global_batch is not a multiple of training.micro_batch.
plan::SearchJob search_job(const config::LoadedConfig& loaded);

}  // namespace hetu::plan
