// `hetu verify REFERENCE.h5`: compare hetu's model against a PyTorch dump (logits, loss,
// gradients, K AdamW steps) and print the max difference per quantity; exit 1 beyond the
// tolerances. scripts/make_reference.py writes such dumps for any GPT-2/LLaMA shape.
#include <cstdio>
#include <fmt/core.h>

#include "app/commands.h"
#include "lib/models/reference_check.h"

namespace hetu::app {

int run_verify(const VerifyOptions& options) {
  const ReferenceReport report = check_against_reference(options.reference);
  const ModelConfig& m = report.model;
  std::fputs(fmt::format("{}: {} with {} layers, hidden {}, {} heads ({} kv), vocab {}; batch {} x {}; {} train steps\n",
                         options.reference, to_string(m.arch), m.layers, m.hidden, m.heads, m.kv_heads, m.vocab,
                         report.batch, report.seq, report.train_steps).c_str(), stdout);
  int failures = 0;
  for (const ReferenceRow& row : report.rows) {
    const bool per_tensor = row.quantity.rfind("grad ", 0) == 0 || row.quantity.rfind("param after ", 0) == 0 ||
                            row.quantity.rfind("zero-grad elements of ", 0) == 0;
    const bool show = options.all || !row.ok() || !per_tensor;
    if (!row.ok()) ++failures;
    if (show) {
      std::fputs(fmt::format("  {:<52} max diff {:10.3e}  tolerance {:10.3e}  {}\n", row.quantity, row.max_diff,
                             row.tolerance, row.ok() ? "ok" : "FAIL").c_str(), stdout);
    }
  }
  // Summaries of the per-tensor rows (each tensor is listed with --all).
  for (const char* prefix : {"grad ", "param after ", "zero-grad elements of "}) {
    double worst_ratio = 0;
    std::string worst;
    int count = 0;
    for (const ReferenceRow& row : report.rows) {
      if (row.quantity.rfind(prefix, 0) != 0) continue;
      ++count;
      const double ratio = row.tolerance > 0 ? row.max_diff / row.tolerance : 0;
      if (ratio >= worst_ratio) {
        worst_ratio = ratio;
        worst = row.quantity;
      }
    }
    if (count > 0) {
      std::fputs(fmt::format("  {:<52} {} tensors, worst {} at {:.3f} of its tolerance\n",
                             std::string(prefix) + "(all)", count, worst, worst_ratio).c_str(), stdout);
    }
  }
  std::fputs(failures == 0 ? "verify: OK\n" : fmt::format("verify: {} quantities beyond tolerance\n", failures).c_str(), stdout);
  return failures == 0 ? 0 : 1;
}

}  // namespace hetu::app
