// A job's own layout priced by the cost model (lib/plan) from catalogue estimates: each
// stage's device rates (a stated share of the catalogue peak in the job's precision; memory
// bandwidth; links within and between nodes, the emulated ones where a node sets them) and
// the model's facts (models/model_costs.h). An emulated CPU type's catalogue peak is its
// emulated peak (the host CPU's divided by emulate_slowdown, as the catalogue file states it).
//
//   LayoutEstimate e = estimate_layout(loaded);
//   e.prediction.step_s;  e.stages[r][s].device_type;
#pragma once

#include <string>
#include <vector>

#include "app/config/config.h"
#include "app/profile_file.h"
#include "lib/plan/cost_model.h"

namespace hetu::app {

// Stated assumptions of the catalogue estimate (docs/config.md, `hetu plan`).
inline constexpr double kGpuEfficiency = 0.45;  // sustained share of the catalogue peak
inline constexpr double kCpuEfficiency = 0.5;

struct StageEstimateInfo {
  bool measured = false;     // compute from the profile, not the catalogue
  std::string devices;       // "gpu-a:0-3"
  std::string device_type;   // the catalogue type of its first device
  double memory_bytes = 0;   // per device; 0: unbounded
  int64_t first_layer = 0, last_layer = 0, tp = 1;
};

struct LayoutEstimate {
  std::vector<plan::ReplicaCost> replicas;
  std::vector<std::vector<StageEstimateInfo>> stages;  // [replica][stage]
  plan::LayoutPrediction prediction;
  double tokens_per_step = 0;
  double flops_per_token = 0;  // forward + backward, the MFU numerator's
  double peak_flops = 0;       // sum of every device's catalogue peak in the job's precision
};

// `profile`: what hetu profile measured (device types' compute, AdamW step and activations;
// links); everything else is estimated from the catalogue.
LayoutEstimate estimate_layout(const config::LoadedConfig& loaded, const Profile& profile = {});

}  // namespace hetu::app
