// The progress line and metrics.jsonl record: the keys users and scripts rely on (step, loss,
// lr, grad_norm, tokens_per_s, mfu, step_s; val_loss when evaluated; peak_mem_gib; switch_s
// and switch_reshard_s after a strategy switch),
// checked field by field against values set by hand; a resumed run's file keeps exactly the
// lines up to the resumed step.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <limits>

#include "lib/runtime/metrics.h"
#include "tests/temp_dir.h"

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

  m.switch_seconds = 0.25;  // a strategy switch since the previous line
  m.switch_reshard_seconds = 0.125;
  CHECK_THAT(metrics_json(m), Catch::EndsWith(R"("peak_mem_gib":12.34,"switch_s":0.25,"switch_reshard_s":0.125})"));
}

TEST_CASE("non-finite metrics are written as JSON null", "[metrics]") {
  StepMetrics m;
  m.loss = std::numeric_limits<double>::quiet_NaN();
  CHECK_THAT(metrics_json(m), Catch::Contains(R"("loss":null)"));
}

}  // namespace hetu::runtime

namespace hetu::runtime {

TEST_CASE("a resumed metrics file keeps the steps up to the resumed one, then appends", "[metrics]") {
  test::TempDir dir("metrics_resume");
  const std::string path = dir.file("metrics.jsonl");
  auto read = [&] {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  // Lines 1..5 of an earlier run, an eval line, and a line torn by a crash.
  const std::string earlier = "{\"step\":1,\"loss\":5}\n{\"step\":2,\"loss\":4}\n{\"step\":3,\"loss\":3}\n"
                              "{\"step\":4,\"loss\":2,\"val_loss\":2.5}\n{\"step\":5,\"loss\":1}\n{\"step\":6,\"lo";
  dir.write("metrics.jsonl", earlier);
  {
    MetricsWriter resumed(path, 4);  // resumed from the checkpoint of step 4
    CHECK(read() == "{\"step\":1,\"loss\":5}\n{\"step\":2,\"loss\":4}\n{\"step\":3,\"loss\":3}\n"
                    "{\"step\":4,\"loss\":2,\"val_loss\":2.5}\n");
    StepMetrics m;
    m.step = 5;
    resumed.write(m);
  }
  const std::string after = read();
  CHECK(after.find("{\"step\":4,\"loss\":2,\"val_loss\":2.5}\n{\"step\":5,\"loss\":0,") != std::string::npos);
  CHECK(std::count(after.begin(), after.end(), '\n') == 5);
  {
    MetricsWriter fresh(path, 0);  // a run that resumed nothing starts the file over
  }
  CHECK(read().empty());
}

}  // namespace hetu::runtime
