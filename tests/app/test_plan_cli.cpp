// `hetu plan` end to end on the job files in configs/: --evaluate prices the catalogue-only
// A100 + H100 job and the emulated CPU job (checked against facts of the job files and
// catalogues); the search returns the best of every layout of the emulated job listed by hand
// here and priced one by one (both --exhaustive and the layout search), and writes it as a
// runnable job file; a 128-GPU, four-type cluster plans in bounded time, deterministically.
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lib/config/config.h"
#include "lib/plan/document_strategies.h"
#include "lib/plan/layout_cost.h"
#include "tests/app/run_hetu.h"
#include "tests/temp_dir.h"

using nlohmann::json;
using hetu::test::run_hetu;

namespace {

// `flags`: "--profile none" prices from the catalogue only.
json plan_json(const std::string& job, const std::string& flags = "") {
  const auto result = run_hetu("plan --evaluate --json " + flags + " " + std::string(HETU_SOURCE_DIR) + "/configs/" + job);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  return json::parse(result.output);
}

// configs/emulated-hetero-cpu.toml without its [parallel] groups, its catalogue by absolute path.
std::string emulated_job_without_layout() {
  const std::string src = HETU_SOURCE_DIR;
  std::ifstream in(src + "/configs/emulated-hetero-cpu.toml");
  std::stringstream text;
  text << in.rdbuf();
  std::string base = text.str().substr(0, text.str().find("[[parallel.replica]]"));
  const std::string relative = "\"catalogs/emulated-cpus.toml\"";
  base.replace(base.find(relative), relative.size(), "\"" + src + "/configs/catalogs/emulated-cpus.toml\"");
  return base;
}

std::string stage(const std::string& devices, const std::string& layers) {
  return "  [[parallel.replica.stage]]\n  devices = \"" + devices + "\"\n  layers = \"" + layers + "\"\n";
}

json evaluate(hetu::test::TempDir& dir, const std::string& job, const std::string& profile) {
  dir.write("job.toml", job);
  dir.write("profile.toml", profile);
  const auto result = run_hetu("plan --evaluate --json --profile " + dir.file("profile.toml") + " " + dir.file("job.toml"));
  INFO(job << profile << result.output);
  REQUIRE(result.exit_code == 0);
  return json::parse(result.output);
}

}  // namespace

TEST_CASE("hetu plan --evaluate: a tp group of unlike devices runs at its slowest member's pace", "[plan_cli]") {
  // One tp-2 stage over fast:0 and slow:0 (either order) against the slow device alone: half
  // its compute, plus 2 all_reduces per layer of the 4 x 128-token x 128-wide f32 activation
  // (262,144 bytes) over the emulated 1 Gb/s, 200 us link: a ring of 2 is 2 steps of half of
  // it, 2 x (200e-6 + 131072 / 1.25e8) s, times 2 x 4 layers. Memory: the slow type's 2 GiB.
  const std::string base = emulated_job_without_layout();
  hetu::test::TempDir dir("plan_tp");
  auto stage0 = [&](const std::string& devices) {
    dir.write("job.toml", base + "[[parallel.replica]]\n  [[parallel.replica.stage]]\n  devices = \"" + devices + "\"\n");
    const auto result = run_hetu("plan --evaluate --json --profile none " + dir.file("job.toml"));
    INFO(result.output);
    REQUIRE(result.exit_code == 0);
    return json::parse(result.output)["replicas"][0]["stages"][0];
  };
  const json alone = stage0("slow:0"), tp = stage0("fast:0; slow:0"), reversed = stage0("slow:0; fast:0");
  const double tp_comm = 2 * 4 * 2 * (200e-6 + 131072 / 1.25e8);
  CHECK(tp["forward_s"].get<double>() == Approx(alone["forward_s"].get<double>() / 2 + tp_comm));
  CHECK(reversed["forward_s"].get<double>() == Approx(tp["forward_s"].get<double>()));
  CHECK(tp["device_type"] == "cpu-slow");
  CHECK(tp["memory_gib"] == 2.0);
}

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
  const json p = plan_json("emulated-hetero-cpu.toml", "--profile none");
  CHECK(p["replicas"][0]["stages"][0]["compute"] == "estimated");
  // Same layers and micro-batch on both; catalogue peaks 0.2 (cpu) and 0.1 (cpu-slow) TFLOP/s.
  const double fast = p["replicas"][0]["stages"][0]["forward_s"], slow = p["replicas"][1]["stages"][0]["forward_s"];
  CHECK(slow == Approx(2 * fast));
  CHECK(p["replicas"][1]["stages"][0]["memory_gib"] == 2.0);
  // Batch shares 2:1 of 24 sequences in micro-batches of 4.
  CHECK(p["replicas"][0]["micro_batches"] == 4);
  CHECK(p["replicas"][1]["micro_batches"] == 2);
}

TEST_CASE("hetu plan returns the best layout of an exhaustive enumeration written out here", "[plan_cli]") {
  // Every layout of the 2-device emulated job (4 layers, 24 sequences = 6 micro-batches of 4),
  // listed by hand: one tp-2 stage; two stages with 1+3, 2+2, 3+1 layers; two replicas with
  // 1..5 of the 6 micro-batches; each with either schedule. Each is priced with --evaluate.
  const std::string src = HETU_SOURCE_DIR;
  const std::string base = emulated_job_without_layout();
  std::vector<std::string> layouts;
  for (const std::string schedule : {"1f1b", "gpipe"}) {
    const std::string head = "[[parallel.replica]]\nschedule = \"" + schedule + "\"\n";
    layouts.push_back(head + "  [[parallel.replica.stage]]\n  devices = \"fast:0; slow:0\"\n  layers = \"0-3\"\n");
    for (const auto& [a, b] : {std::pair{"0-0", "1-3"}, {"0-1", "2-3"}, {"0-2", "3-3"}})
      layouts.push_back(head + stage("fast:0", a) + stage("slow:0", b));
    for (int share = 1; share <= 5; ++share) {
      layouts.push_back(head + "batch_share = " + std::to_string(share) + "\n" + stage("fast:0", "0-3") + head +
                        "batch_share = " + std::to_string(6 - share) + "\n" + stage("slow:0", "0-3"));
    }
  }
  REQUIRE(layouts.size() == 18);
  hetu::test::TempDir dir("plan_search");
  double best = 1e30;
  for (size_t i = 0; i < layouts.size(); ++i) {
    dir.write("job.toml", base + layouts[i]);
    const auto result = run_hetu("plan --evaluate --json --profile none " + dir.file("job.toml"));
    INFO(layouts[i] << result.output);
    REQUIRE(result.exit_code == 0);
    best = std::min(best, json::parse(result.output)["predicted_step_s"].get<double>());
  }
  const auto searched = run_hetu("plan --exhaustive --json --profile none --out " + dir.file("planned.toml") + " " + src +
                                 "/configs/emulated-hetero-cpu.toml");
  INFO(searched.output);
  REQUIRE(searched.exit_code == 0);
  const json candidates = json::parse(searched.output)["candidates"];
  CHECK(candidates.size() == 18);
  CHECK(candidates[0]["predicted_step_s"].get<double>() == Approx(best).epsilon(1e-9));
  // The written job is the best layout, runnable as it is: --evaluate prices it the same.
  const auto planned = run_hetu("plan --evaluate --json --profile none " + dir.file("planned.toml"));
  REQUIRE(planned.exit_code == 0);
  CHECK(json::parse(planned.output)["predicted_step_s"].get<double>() == Approx(best).epsilon(1e-9));
  // Without --exhaustive: the layout search finds the same best.
  const auto fast = run_hetu("plan --json --profile none " + src + "/configs/emulated-hetero-cpu.toml");
  REQUIRE(fast.exit_code == 0);
  CHECK(json::parse(fast.output)["candidates"][0]["predicted_step_s"].get<double>() == Approx(best).epsilon(1e-9));
}

TEST_CASE("hetu plan without --profile measures the CPU types in this process, each x its slowdown", "[plan_cli]") {
  const json p = plan_json("emulated-hetero-cpu.toml");
  const json fast = p["replicas"][0]["stages"][0], slow = p["replicas"][1]["stages"][0];
  CHECK(fast["compute"] == "measured");
  CHECK(slow["compute"] == "measured");
  // One measurement of this CPU, the slow type's x its emulate_slowdown = 2 (not the catalogue's
  // estimate: that is checked against the same ratio above, so compare with it too).
  CHECK(slow["forward_s"].get<double>() == Approx(2 * fast["forward_s"].get<double>()).epsilon(1e-6));
  const json estimated = plan_json("emulated-hetero-cpu.toml", "--profile none");
  CHECK(fast["forward_s"].get<double>() != estimated["replicas"][0]["stages"][0]["forward_s"].get<double>());
}

TEST_CASE("hetu plan --exhaustive: a cluster past the listing's limit is refused, exit 2", "[plan_cli]") {
  const auto result = run_hetu("plan --exhaustive " + std::string(HETU_SOURCE_DIR) + "/configs/gpt2-124m-dp2-tp2-pp2.toml");
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, Catch::Matchers::Contains("exceed the exhaustive listing's limit"));
  const auto text = run_hetu("plan --evaluate " + std::string(HETU_SOURCE_DIR) + "/configs/emulated-hetero-cpu.toml");
  CHECK(text.exit_code == 0);
  CHECK_THAT(text.output, Catch::Matchers::Contains("predicted step"));
}

TEST_CASE("hetu profile measures each CPU type with its emulation, and hetu plan --profile uses it", "[plan_cli]") {
  hetu::test::TempDir dir("profile");
  const std::string job = std::string(HETU_SOURCE_DIR) + "/configs/emulated-hetero-cpu.toml";
  const auto profiled = run_hetu("profile " + job + " --set training.threads=1 --out " + dir.file("profile.toml"));
  INFO(profiled.output);
  REQUIRE(profiled.exit_code == 0);
  // Read the file as plain text: one [[profile]] table per type, in node order.
  std::ifstream in(dir.file("profile.toml"));
  std::map<std::string, std::map<std::string, double>> times;
  std::string type;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("device_type = ", 0) == 0) type = line.substr(15, line.size() - 16);
    const size_t eq = line.find(" = ");
    if (eq != std::string::npos && line.find("_s = ") != std::string::npos) {
      times[type][line.substr(0, eq)] = std::stod(line.substr(eq + 3));
    }
  }
  REQUIRE(times.size() == 2);
  for (const char* key : {"layer_forward_s", "layer_backward_s", "embed_forward_s", "head_forward_s"}) {
    INFO(key);
    CHECK(times["cpu"][key] > 0);
    CHECK(times["cpu-slow"][key] == Approx(2 * times["cpu"][key]).epsilon(1e-6));  // emulate_slowdown = 2
  }
  // The fast replica holds the whole model on one device: embedding + 4 layers + head, per micro-batch.
  const auto planned = run_hetu("plan --evaluate --json --profile " + dir.file("profile.toml") + " " + job);
  INFO(planned.output);
  REQUIRE(planned.exit_code == 0);
  const json fast = json::parse(planned.output)["replicas"][0]["stages"][0];
  CHECK(fast["compute"] == "measured");
  CHECK(fast["forward_s"].get<double>() ==
        Approx(times["cpu"]["embed_forward_s"] + 4 * times["cpu"]["layer_forward_s"] + times["cpu"]["head_forward_s"]));
  // A bad profile file is a usage error naming the key.
  dir.write("bad.toml", "[[profile]]\ndevice_type = \"cpu\"\nlayer_forward_s = -1\n");
  const auto bad = run_hetu("plan --evaluate --profile " + dir.file("bad.toml") + " " + job);
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.output, Catch::Matchers::Contains("profile[0].layer_forward_s: expected seconds >= 0"));
}

TEST_CASE("the layout cost gives each ZeRO-1 stage device its share of the replicas' holders", "[plan_cli]") {
  // gpt2-hetero-replicas: replica A is two tp-1 stages (layers 0-1, 2-3), replica B one tp-2
  // stage (0-3): every layer has 3 holders, so A's devices keep 1/3 of their stage's state and
  // B's 2/3 of theirs; memory drops by the moments and master weights given up (4 x params
  // replicated, 2 x params + 3 x share x params with ZeRO-1).
  const std::string job = std::string(HETU_SOURCE_DIR) + "/configs/layouts/gpt2-hetero-replicas.toml";
  const hetu::plan::LayoutEstimate plain = hetu::plan::estimate_layout(hetu::config::load_job_config(job, {}));
  const hetu::plan::LayoutEstimate zero = hetu::plan::estimate_layout(hetu::config::load_job_config(job, {"parallel.zero=1"}));
  const double share[2][2] = {{1.0 / 3, 1.0 / 3}, {2.0 / 3, 0}};
  for (size_t r = 0; r < 2; ++r) {
    for (size_t s = 0; s < zero.replicas[r].stages.size(); ++s) {
      INFO("replica " << r << " stage " << s);
      const hetu::plan::StageCost& stage = zero.replicas[r].stages[s];
      CHECK(plain.replicas[r].stages[s].zero_state_share == 0);
      CHECK(stage.zero_state_share == Approx(share[r][s]));
      const double saved = stage.param_bytes * (4 - (2 + 3 * share[r][s]));
      CHECK(plain.prediction.peak_bytes[r][s] - zero.prediction.peak_bytes[r][s] == Approx(saved));
    }
  }
}

TEST_CASE("per-batch layouts: with parallel.zero = 1 a compute copy sits beside the default's sharded state",
          "[plan_cli]") {
  // configs/gpt2-buckets-cpu.toml: the default dp=4 holds the whole model on each device; with
  // ZeRO-1 each keeps 1/4 of the AdamW moments and f32 master weights, so a lane's devices hold
  // (2 + 3/4) x the default's parameter bytes beside their compute copy instead of 4 x.
  const std::string job = std::string(HETU_SOURCE_DIR) + "/configs/gpt2-buckets-cpu.toml";
  const hetu::config::LoadedConfig plain = hetu::config::load_job_config(job, {});
  const hetu::config::LoadedConfig zero = hetu::config::load_job_config(job, {"parallel.zero=1"});
  const hetu::plan::LayoutEstimate estimate = hetu::plan::estimate_layout(plain);
  const hetu::plan::StageCost& held = estimate.replicas[0].stages[0];
  const std::vector<hetu::plan::DocumentStrategy> whole = hetu::plan::job_strategies(plain, {});
  const std::vector<hetu::plan::DocumentStrategy> sharded = hetu::plan::job_strategies(zero, {});
  REQUIRE(whole.size() == 3);
  REQUIRE(sharded.size() == 3);
  for (size_t l = 1; l < whole.size(); ++l) {
    INFO("strategy " << whole[l].name);
    CHECK(whole[l].replicas[0].resident_bytes == Approx(4 * held.param_bytes + held.reserved_bytes));
    CHECK(sharded[l].replicas[0].resident_bytes == Approx((2 + 3.0 / 4) * held.param_bytes + held.reserved_bytes));
  }
}

TEST_CASE("hetu plan: 128 GPUs of four types with differing networks, in bounded time, deterministic", "[plan_cli]") {
  // tests/data/plan-128-gpus.toml (scripts/bench/make_plan_job.py): LLaMA-2 7B, 16 nodes of 8.
  hetu::test::TempDir dir("plan_128");
  const std::string job = std::string(HETU_SOURCE_DIR) + "/tests/data/plan-128-gpus.toml";
  const auto start = std::chrono::steady_clock::now();
  const auto first = run_hetu("plan --json --top 2 --out " + dir.file("planned.toml") + " " + job);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(first.output.substr(0, 2000));
  REQUIRE(first.exit_code == 0);
  CHECK(seconds < 120);  // ~2 s on a quiet core; the bound only catches a search gone exponential
  const json candidates = json::parse(first.output)["candidates"];
  REQUIRE(candidates.size() >= 2);
  CHECK(candidates[0]["fits"] == true);
  // Every device in a group, each once.
  int64_t devices = 0;
  for (const json& replica : candidates[0]["replicas"])
    for (const json& stage : replica["stages"]) devices += stage["tp"].get<int64_t>();
  CHECK(devices == 128);
  // Never worse than the best layout the dp/tp/pp shorthand writes (listed last unless ranked).
  const json& uniform = candidates.back();
  REQUIRE(uniform["uniform"] == true);
  CHECK(candidates[0]["predicted_step_s"].get<double>() <= uniform["predicted_step_s"].get<double>() * (1 + 1e-9));
  // The written job prices the same; a second run prints the same.
  const auto planned = run_hetu("plan --evaluate --json " + dir.file("planned.toml"));
  REQUIRE(planned.exit_code == 0);
  CHECK(json::parse(planned.output)["predicted_step_s"].get<double>() ==
        Approx(candidates[0]["predicted_step_s"].get<double>()).epsilon(1e-12));
  const auto second = run_hetu("plan --json --top 2 " + job);
  CHECK(second.output == first.output);
}

TEST_CASE("hetu plan --profile: measured links, tp entries and the AdamW step replace the estimates", "[plan_cli]") {
  hetu::test::TempDir dir("profile_use");
  const std::string base = emulated_job_without_layout();
  // An entry of the first version of the file (no tp, AdamW or activation keys) still reads.
  const std::string fast = "[[profile]]\ndevice_type = \"cpu\"\nmicro_batch = 4\nseq_len = 128\n"
                           "layer_forward_s = 0.004\nlayer_backward_s = 0.008\nembed_forward_s = 0.0002\n"
                           "embed_backward_s = 0.0003\nhead_forward_s = 0.001\nhead_backward_s = 0.002\n";
  const std::string slow = "[[profile]]\ndevice_type = \"cpu-slow\"\nmicro_batch = 4\nseq_len = 128\n"
                           "layer_forward_s = 0.008\nlayer_backward_s = 0.016\nembed_forward_s = 0.0004\n"
                           "embed_backward_s = 0.0006\nhead_forward_s = 0.002\nhead_backward_s = 0.004\n";
  const std::string link = "[[link]]\nkind = \"p2p\"\nscope = \"between\"\nhosts = [\"slow\", \"fast\"]\n"
                           "gbps = 0.5\nlatency_us = 1000\n";
  SECTION("a measured p2p link prices the activation crossing the stage edge") {
    const json p = evaluate(dir, base + "[[parallel.replica]]\n" + stage("fast:0", "0-1") + stage("slow:0", "2-3"),
                            fast + slow + link);
    // One micro-batch's hidden state: 4 x 128 tokens x 128 floats of 4 bytes, at 0.5 Gb/s after 1 ms.
    const double bytes = 4.0 * 128 * 128 * 4;
    CHECK(p["replicas"][0]["stages"][0]["send_s"].get<double>() == Approx(1e-3 + bytes * 8 / 0.5e9));
    CHECK(p["replicas"][0]["stages"][0]["forward_s"].get<double>() == Approx(0.0002 + 2 * 0.004));
    CHECK(p["replicas"][0]["stages"][1]["forward_s"].get<double>() == Approx(2 * 0.008 + 0.002));
  }
  SECTION("a measured AdamW step is scaled by the parameters a stage holds") {
    // Each replica holds the whole model (842,496 parameters; the AdamW keys name 1/4 of it).
    const std::string adam = "optimizer_s = 0.01\noptimizer_params = 210624\n";
    const json p = evaluate(dir, base + "[[parallel.replica]]\n" + stage("fast:0", "0-3") + "[[parallel.replica]]\n" +
                                     stage("slow:0", "0-3"),
                            fast + adam + slow + "optimizer_s = 0.03\noptimizer_params = 842496\n");
    CHECK(p["optimizer_s"].get<double>() == Approx(0.04));  // the slower: the fast one's 0.01 x 4 = 0.04 > 0.03
  }
  SECTION("an entry measured at the stage's tp is used as it is, collectives included") {
    std::string one_node = base.substr(0, base.find("\n[cluster]")) + "\n[cluster]\n[[cluster.node]]\nhost = \"localhost\"\n"
                           "devices = { type = \"cpu\", count = 2 }\n";
    const std::string tp2 = "[[profile]]\ndevice_type = \"cpu\"\ntp = 2\nmicro_batch = 4\nseq_len = 128\n"
                            "layer_forward_s = 0.003\nlayer_backward_s = 0.005\nembed_forward_s = 0.0002\n"
                            "embed_backward_s = 0.0003\nhead_forward_s = 0.0007\nhead_backward_s = 0.001\n";
    const json p = evaluate(dir, one_node + "[[parallel.replica]]\n" + stage("localhost:0-1", "0-3"), fast + tp2);
    CHECK(p["replicas"][0]["stages"][0]["forward_s"].get<double>() == Approx(0.0002 + 4 * 0.003 + 0.0007));
    CHECK(p["replicas"][0]["stages"][0]["backward_s"].get<double>() == Approx(0.0003 + 4 * 0.005 + 0.001));
  }
  SECTION("a type measured at tp 1 only takes another type's tp entry, scaled by their tp-1 layer times") {
    // A tp-2 stage over fast:0 and slow:0 runs at cpu-slow's pace. cpu-slow has no tp-2 entry;
    // cpu's tp-2 one, times (0.008 + 0.016) / (0.004 + 0.008) = 2, replaces the tp-1 split.
    const std::string cpu_tp2 = "[[profile]]\ndevice_type = \"cpu\"\ntp = 2\nmicro_batch = 4\nseq_len = 128\n"
                                "layer_forward_s = 0.003\nlayer_backward_s = 0.005\nembed_forward_s = 0.0002\n"
                                "embed_backward_s = 0.0003\nhead_forward_s = 0.0007\nhead_backward_s = 0.001\n";
    const json p = evaluate(dir, base + "[[parallel.replica]]\n" + stage("fast:0; slow:0", "0-3"), fast + slow + cpu_tp2);
    CHECK(p["replicas"][0]["stages"][0]["device_type"] == "cpu-slow");
    CHECK(p["replicas"][0]["stages"][0]["forward_s"].get<double>() == Approx(2 * (0.0002 + 4 * 0.003 + 0.0007)));
    CHECK(p["replicas"][0]["stages"][0]["backward_s"].get<double>() == Approx(2 * (0.0003 + 4 * 0.005 + 0.001)));
  }
}

TEST_CASE("hetu plan: per-batch layouts of a job packing documents, every document in one bucket", "[plan_cli]") {
  // configs/gpt2-switch-cpu.toml lists four strategies; with documents, the bucket planner
  // splits a long-tailed batch of global_batch x seq_len tokens over them (--evaluate), or
  // over the layouts the search ranked.
  const json j = plan_json("gpt2-switch-cpu.toml", "--profile none --set data.packing=documents");
  REQUIRE(j.contains("per_batch_layouts"));
  const json& p = j["per_batch_layouts"];
  const json& buckets = p["buckets"];
  REQUIRE(!buckets.empty());
  CHECK(buckets.back()["max_len"].is_null());
  int64_t documents = 0;
  double tokens = 0, seconds = 0, previous = 0;
  for (size_t b = 0; b < buckets.size(); ++b) {
    if (b + 1 < buckets.size()) {
      CHECK(buckets[b]["max_len"].get<double>() > previous);
      previous = buckets[b]["max_len"].get<double>();
    }
    const std::string strategy = buckets[b]["strategy"];
    CHECK((strategy == "default" || strategy == "pp2-dp2" || strategy == "hetero" || strategy == "tp2-half"));
    documents += buckets[b]["documents"].get<int64_t>();
    tokens += buckets[b]["tokens"].get<double>();
    seconds += buckets[b]["predicted_s"].get<double>();
  }
  CHECK(documents == p["documents"].get<int64_t>());
  CHECK(tokens == 16 * 128);  // global_batch x seq_len
  CHECK(seconds == Approx(p["predicted_s"].get<double>()));
  CHECK(p["predicted_s"].get<double>() <= p["best_single_s"].get<double>() * (1 + 1e-9));
  // Windows (the default packing): no per-batch layouts.
  CHECK_FALSE(plan_json("gpt2-switch-cpu.toml", "--profile none").contains("per_batch_layouts"));
  // The search: the planner picks among the ranked layouts that fit, named by rank.
  const auto searched = run_hetu("plan --json --profile none --top 3 --set data.packing=documents " +
                                 std::string(HETU_SOURCE_DIR) + "/configs/gpt2-switch-cpu.toml");
  INFO(searched.output);
  REQUIRE(searched.exit_code == 0);
  const json s = json::parse(searched.output)["per_batch_layouts"];
  REQUIRE(!s["buckets"].empty());
  for (const json& b : s["buckets"]) CHECK((b["strategy"] == "1" || b["strategy"] == "2" || b["strategy"] == "3"));
}
