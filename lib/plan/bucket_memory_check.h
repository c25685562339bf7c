// The launch check of fixed [[parallel.bucket]] entries' memory ([parallel] auto's buckets are
// planned to fit, lib/plan/bucket_planner.h): a bucket under a strategy other than "default"
// runs on a compute copy of the parameters and its gradients beside the default's training
// state, in rows as short as its max_len allows (lib/pipeline/bucket_rows.h). Each is priced
// as the bucket planner prices it (job_strategies, document_strategies.h) for a whole global
// batch of its longest documents (plan::full_batch_load), before compute starts, against the
// whole of its devices' memory (the planner's margin is for what it picks itself): refused
// when not even one micro-batch of its rows fits, warned about when a full pipeline does not.
//
//   check_bucket_memory(loaded, profile);   // UsageError naming the bucket, strategy and device
#pragma once

#include "lib/config/config.h"
#include "lib/profile/profile_file.h"

namespace hetu::plan {

// Throws UsageError (exit 2) on the first of the job's [[parallel.bucket]] whose strategy's
// devices cannot hold it (not for buckets planned each step: they are planned to fit).
void check_bucket_memory(const config::LoadedConfig& loaded, const profile::Profile& profile);

}  // namespace hetu::plan
