// The Trainer's options from a job file: steps, the LR schedule, AdamW, clipping, logging,
// evaluation, checkpoints (resume, init_from), metrics and telemetry. What only the rank
// knows (the FLOPs, the peak, switches, straggler watch) the caller adds.
//
//   runtime::TrainerOptions o = trainer_options(c, /*stop_at_step=*/0, /*reporting_rank=*/rank == 0);
#pragma once

#include <cstdint>

#include "lib/config/job_config.h"
#include "lib/runtime/trainer.h"

namespace hetu::train {

// `stop_at_step` > 0 pauses after that step (checkpoint, exit 0); the reporting rank writes
// metrics.jsonl and draws the progress bar (on a terminal).
runtime::TrainerOptions trainer_options(const config::JobConfig& c, int64_t stop_at_step, bool reporting_rank);

}  // namespace hetu::train
