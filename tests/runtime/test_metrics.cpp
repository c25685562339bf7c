// The progress line and metrics.jsonl record: the keys users and scripts rely on (step, loss,
// lr, grad_norm, tokens_per_s, mfu, step_s; val_loss when evaluated; peak_mem_gib),
// checked field by field against values set by hand.
#include <catch2/catch.hpp>

#include <limits>

#include "lib/runtime/metrics.h"

namespace hetu::runtime {

TEST_CASE("progress line and JSON carry every metric, optional ones only when set", "[metrics]") {
  StepMetrics m;
  m.step = 40;
  m.total_steps = 200;
  m.loss = 2.45123;
  m.lr = 1e-3;
  m.grad_norm = 0.8125;
  m.tokens_per_s = 10234;
  m.mfu = 0.3121;
  m.step_seconds = 0.5;
  m.eta_seconds = 65;
  CHECK(progress_line(m) == "step  40/200 | loss 2.4512 | lr 1.00e-03 | norm 0.812 | 10.2k tok/s | MFU 31.2% | ETA 1m05s");
  CHECK(metrics_json(m) ==
        R"({"step":40,"loss":2.45123,"lr":0.001,"grad_norm":0.8125,"tokens_per_s":10234,"mfu":0.3121,"step_s":0.5})");

  m.val_loss = 2.5;
  m.peak_memory_gib = 12.34;
  CHECK(progress_line(m) ==
        "step  40/200 | loss 2.4512 | val 2.5000 | lr 1.00e-03 | norm 0.812 | 10.2k tok/s | MFU 31.2% | mem 12.3 GiB | ETA 1m05s");
  CHECK(metrics_json(m) == R"({"step":40,"loss":2.45123,"lr":0.001,"grad_norm":0.8125,"tokens_per_s":10234,)"
                           R"("mfu":0.3121,"step_s":0.5,"val_loss":2.5,"peak_mem_gib":12.34})");
}

TEST_CASE("non-finite metrics are written as JSON null", "[metrics]") {
  StepMetrics m;
  m.loss = std::numeric_limits<double>::quiet_NaN();
  CHECK_THAT(metrics_json(m), Catch::Contains(R"("loss":null)"));
}

}  // namespace hetu::runtime
