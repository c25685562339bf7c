// Checks hetu's model numerics against a PyTorch dump (written for any shape by
// scripts/make_reference.py, whose docstring describes the format): the model config from
// the file's root attributes, its parameters, one batch; then logits, loss, every gradient, and K AdamW steps
// (losses, pre-clip gradient norms, final parameters) are compared within tolerances.
// `hetu verify` prints the report; tests/models asserts it.
#pragma once

#include <string>
#include <vector>

#include "lib/models/model_config.h"

namespace hetu {

struct ReferenceRow {
  std::string quantity;   // "logits", "loss", "grad h.0.attn.c_attn.weight", ...
  double max_diff = 0;    // max |hetu - reference| (relative L2 error for "param after")
  double tolerance = 0;   // allowed max_diff
  bool ok() const { return max_diff <= tolerance; }
};

struct ReferenceReport {
  ModelConfig model;
  int64_t batch = 0, seq = 0, train_steps = 0;
  std::vector<ReferenceRow> rows;
  bool ok() const;
  const ReferenceRow& row(const std::string& quantity) const;
};

// Throws UsageError for unreadable or inconsistent files (naming the file and object).
ReferenceReport check_against_reference(const std::string& path);

}  // namespace hetu
