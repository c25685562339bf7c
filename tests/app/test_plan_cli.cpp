// `hetu plan --evaluate` end to end on the job files in configs/: the catalogue-only A100 +
// H100 job and the emulated CPU job are priced; the JSON holds every stage with its
// predicted peak memory; checks against facts of the job files and catalogues, not against
// the cost model's own numbers.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "tests/app/run_hetu.h"

using nlohmann::json;
using hetu::test::run_hetu;

namespace {

json plan_json(const std::string& job) {
  const auto result = run_hetu("plan --evaluate --json " + std::string(HETU_SOURCE_DIR) + "/configs/" + job);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  return json::parse(result.output);
}

}  // namespace

TEST_CASE("hetu plan --evaluate prices the A100 + H100 job from the catalogue", "[plan_cli]") {
  const json p = plan_json("llama-7b-hetero-a100-h100.toml");
  REQUIRE(p["replicas"].size() == 2);
  // The job file: 3 stages on A100s (tp 4, 2, 2), 2 on H100s; batch shares 2:3 of 80
  // sequences in micro-batches of 1 and 2.
  CHECK(p["replicas"][0]["stages"].size() == 3);
  CHECK(p["replicas"][1]["stages"].size() == 2);
  CHECK(p["replicas"][0]["stages"][0]["device_type"] == "A100-80G");
  CHECK(p["replicas"][1]["stages"][0]["device_type"] == "H100-80G");
  CHECK(p["replicas"][0]["stages"][0]["tp"] == 4);
  CHECK(p["replicas"][0]["micro_batches"] == 32);
  CHECK(p["replicas"][1]["micro_batches"] == 24);
  const double step = p["predicted_step_s"], pipeline = p["pipeline_s"], sync = p["grad_sync_s"],
               optimizer = p["optimizer_s"];
  CHECK(step == Approx(pipeline + sync + optimizer));
  for (const json& replica : p["replicas"]) CHECK(replica["pipeline_s"].get<double>() <= pipeline + 1e-12);
  // LLaMA-2 7B layer: 4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096 parameters; stage 0 holds 14 of them
  // and the 32000 x 4096 embedding on tp 4: weights, gradients and AdamW moments at least.
  const double layer = 4.0 * 4096 * 4096 + 3.0 * 4096 * 11008 + 2 * 4096;
  const double lower_gib = 16 * (14 * layer + 32000.0 * 4096) / 4 / (1 << 30);
  const double stage0 = p["replicas"][0]["stages"][0]["predicted_peak_gib"];
  CHECK(stage0 >= lower_gib);
  CHECK(stage0 <= 80);
  CHECK(p["replicas"][0]["stages"][0]["fits"] == true);
  CHECK(p["replicas"][0]["stages"][0]["memory_gib"] == 80.0);
}

TEST_CASE("hetu plan --evaluate: the emulated slow CPU takes twice as long per micro-batch", "[plan_cli]") {
  const json p = plan_json("emulated-hetero-cpu.toml");
  // Same layers and micro-batch on both; catalogue peaks 0.2 (cpu) and 0.1 (cpu-slow) TFLOP/s.
  const double fast = p["replicas"][0]["stages"][0]["forward_s"], slow = p["replicas"][1]["stages"][0]["forward_s"];
  CHECK(slow == Approx(2 * fast));
  CHECK(p["replicas"][1]["stages"][0]["memory_gib"] == 2.0);
  // Batch shares 2:1 of 24 sequences in micro-batches of 4.
  CHECK(p["replicas"][0]["micro_batches"] == 4);
  CHECK(p["replicas"][1]["micro_batches"] == 2);
}

TEST_CASE("hetu plan without --evaluate says the search is not there yet, exit 2", "[plan_cli]") {
  const auto result = run_hetu("plan " + std::string(HETU_SOURCE_DIR) + "/configs/emulated-hetero-cpu.toml");
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, Catch::Matchers::Contains("--evaluate"));
  const auto text = run_hetu("plan --evaluate " + std::string(HETU_SOURCE_DIR) + "/configs/emulated-hetero-cpu.toml");
  CHECK(text.exit_code == 0);
  CHECK_THAT(text.output, Catch::Matchers::Contains("predicted step"));
}
