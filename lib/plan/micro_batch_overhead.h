// The fixed cost of one micro-batch on each stage of a priced layout (Note [Fixed cost per
// micro-batch] in lib/plan/document_cost.cpp): what it pays however few tokens it holds.
// Compute: the intercept a of a least-squares fit time = a + b x micro_batch over the
// profile's entries of the stage's device type and tp (of tp 1 when it has none at that tp),
// per layer, embedding and LM head, when the profile measured two micro-batch sizes or more
// (none otherwise); messages: the latency of every tp collective's ring step (unless the fit
// was of the stage's own tp, whose measured times hold them) and of the send to the next
// stage. Each part is at most the stage's per-token time.
//
//   std::vector<std::vector<plan::StageTimes>> f = micro_batch_overhead(loaded, profile, estimate);
//   f[r][s].forward_s;   // seconds every micro-batch of replica r pays on stage s's forward
#pragma once

#include <optional>
#include <vector>

#include "lib/config/config.h"
#include "lib/plan/layout_cost.h"
#include "lib/plan/pipeline_time.h"
#include "lib/profile/profile_file.h"

namespace hetu::plan {

// One profile column's fit over micro-batch sizes: time = intercept + slope x micro_batch.
struct MicroBatchFit {
  double layer_forward_s = 0, layer_backward_s = 0;
  double embed_forward_s = 0, embed_backward_s = 0;
  double head_forward_s = 0, head_backward_s = 0;
};

// The intercepts (each at least 0) of `type`'s entries at `tp` and `seq_len`; nullopt with
// fewer than two distinct micro-batch sizes.
std::optional<MicroBatchFit> micro_batch_intercepts(const profile::Profile& profile, const std::string& type, int64_t tp,
                                                    int64_t seq_len);

// Per replica and stage of `estimate` (estimate_layout of `loaded`, on `profile`).
std::vector<std::vector<plan::StageTimes>> micro_batch_overhead(const config::LoadedConfig& loaded,
                                                                const profile::Profile& profile,
                                                                const LayoutEstimate& estimate);

}  // namespace hetu::plan
