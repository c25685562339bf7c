// A hetu checkpoint rewritten without training: consolidated (a sharded checkpoint -> one
// whole-tensor file) or resharded for a job (the stored boxes that job's ranks will read, so
// each rank then reads exactly its own boxes; which boxes those are comes from
// checkpoint::local_slots, the checkpoint store's own). Both read through
// checkpoint::read_boxes, the reshard-on-load path training uses, and verify every stored
// piece they read. The output is a new (or empty) checkpoints folder with one step folder and
// `latest`; the optimizer state and metadata (data position, job config) come along, so
// training resumes from it exactly as from the input.
//
//   RewrittenCheckpoint r = consolidate_checkpoint("runs/a/checkpoints", "whole/");
//   RewrittenCheckpoint s = reshard_checkpoint("runs/a", "for-b/", job_b, mpi.host(), *comm);
#pragma once

#include <cstdint>
#include <string>

#include "lib/config/job_config.h"
#include "lib/hspmd/communicator.h"

namespace hetu::weights {

struct RewrittenCheckpoint {
  std::string input_step;  // the step folder read
  int64_t step = 0;
  bool sharded = false;    // the input was written in boxes by several ranks
  int64_t tensors = 0;     // tensors written (consolidate)
  int64_t boxes = 0;       // boxes written (reshard)
  int64_t devices = 0;     // the job's devices (reshard)
  std::string written;     // the step folder written
};

RewrittenCheckpoint consolidate_checkpoint(const std::string& input, const std::string& output);

// The boxes of `job`'s layout with its ranks on `host` (only the boxes matter here); `comm` a
// world of one that writes them.
RewrittenCheckpoint reshard_checkpoint(const std::string& input, const std::string& output, const config::JobConfig& job,
                                       const std::string& host, Communicator& comm);

}  // namespace hetu::weights
