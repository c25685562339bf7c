// Every job file in configs/ validates; the dp/tp/pp shorthand expands to the same groups
// as the hand-written explicit form; the resolved TOML loads back to the same config;
// model flavors have the published shapes (parameter counts from the model cards).
#include <catch2/catch.hpp>

#include <filesystem>

#include "lib/config/config.h"
#include "lib/config/device_spec.h"
#include "lib/util/build_info.h"

using namespace hetu;
using namespace hetu::config;

namespace {

std::vector<std::string> config_files() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(HETU_SOURCE_DIR "/configs")) {
    if (entry.path().extension() == ".toml") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The resolved form must describe the same job; only the source name and the record of
// the shorthand (the printed form is explicit) may differ.
void require_same_job(JobConfig a, JobConfig b) {
  a.source = b.source = "";
  for (JobConfig* c : {&a, &b}) {
    c->parallel.shorthand.reset();
    for (StrategySection& s : c->strategies) s.parallel.shorthand.reset();
  }
  CHECK(a.job == b.job);
  CHECK(a.model == b.model);
  CHECK(a.data == b.data);
  CHECK(a.training == b.training);
  CHECK(a.optimizer == b.optimizer);
  CHECK(a.lr_schedule == b.lr_schedule);
  CHECK(a.checkpoint == b.checkpoint);
  CHECK(a.cluster == b.cluster);
  CHECK(a.parallel == b.parallel);
  CHECK(a.strategies == b.strategies);
  CHECK(a.switches == b.switches);
  CHECK(a.buckets == b.buckets);
  CHECK(a == b);
}

StageSection stage(const std::string& devices, const std::string& layers) {
  return StageSection{parse_device_list(devices), parse_layer_range(layers)};
}

}  // namespace

TEST_CASE("every file in configs/ validates and its resolved form loads back identically", "[configs]") {
  const std::vector<std::string> files = config_files();
  REQUIRE(files.size() >= 4);
  for (const std::string& file : files) {
    INFO(file);
    LoadedConfig loaded = load_job_config(file, {});
    CHECK(loaded.warnings.empty());
    LoadedConfig again = load_job_config_text(to_toml(loaded.config), "resolved.toml", {});
    require_same_job(loaded.config, again.config);
  }
}

TEST_CASE("every file in configs/ loads with --set training.steps=10 (a longer warm-up is capped)", "[configs]") {
  for (const std::string& file : config_files()) {
    INFO(file);
    const LoadedConfig loaded = load_job_config(file, {"training.steps=10"});
    CHECK(loaded.config.training.steps == 10);
    CHECK(loaded.config.lr_schedule.warmup_steps <= 10);
    for (const std::string& warning : loaded.warnings) {
      CHECK_THAT(warning, Catch::Matchers::Contains("lr_schedule.warmup_steps: warmup_steps = "));
      CHECK_THAT(warning, Catch::Matchers::EndsWith("exceeds training.steps = 10; capped at 10"));
    }
  }
}

TEST_CASE("llama rope_scaling: the flavor's, one key overridden, none, and the resolved form loads back", "[configs]") {
  const std::string file = HETU_SOURCE_DIR "/configs/llama-tiny-cpu.toml";
  const LoadedConfig flavored = load_job_config(file, {"model.flavor=1b"});
  CHECK(flavored.config.model.rope_scaling == RopeScaling{RopeScalingType::llama3, 32.0, 1.0, 4.0, 8192});
  const LoadedConfig one_key = load_job_config(file, {"model.flavor=1b", "model.rope_scaling.factor=16"});
  CHECK(one_key.config.model.rope_scaling == RopeScaling{RopeScalingType::llama3, 16.0, 1.0, 4.0, 8192});
  const LoadedConfig off = load_job_config(file, {"model.flavor=1b", R"(model.rope_scaling={type="none"})"});
  CHECK(off.config.model.rope_scaling.type == RopeScalingType::none);
  const LoadedConfig given = load_job_config(file, {R"(model.rope_scaling={type="llama3",factor=4,low_freq_factor=1,)"
                                                    R"(high_freq_factor=2,original_max_position_embeddings=32})"});
  CHECK(given.config.model.rope_scaling == RopeScaling{RopeScalingType::llama3, 4.0, 1.0, 2.0, 32});
  for (const LoadedConfig* loaded : {&flavored, &one_key, &off, &given}) {
    const std::string resolved = to_toml(loaded->config);
    INFO(resolved);
    require_same_job(loaded->config, load_job_config_text(resolved, "resolved.toml", {}).config);
  }
}

TEST_CASE("the embedded default job is configs/gpt2-tiny-cpu.toml", "[configs]") {
  LoadedConfig embedded = load_job_config_text(default_job_toml(), "embedded", {});
  LoadedConfig file = load_job_config(HETU_SOURCE_DIR "/configs/gpt2-tiny-cpu.toml", {});
  require_same_job(embedded.config, file.config);
}

TEST_CASE("dp/tp/pp shorthand expands to the explicit groups a user would write", "[configs]") {
  LoadedConfig shorthand = load_job_config(HETU_SOURCE_DIR "/configs/gpt2-124m-dp2-tp2-pp2.toml", {});
  REQUIRE(shorthand.config.parallel.shorthand.has_value());
  // Written by hand: dp-pp-tp order, tp innermost, 12 layers split 6/6.
  const std::string explicit_groups = R"(
[[parallel.replica]]
  [[parallel.replica.stage]]
  devices = "gpu-node-0:0-1"
  layers = "0-5"
  [[parallel.replica.stage]]
  devices = "gpu-node-0:2-3"
  layers = "6-11"
[[parallel.replica]]
  [[parallel.replica.stage]]
  devices = "gpu-node-0:4-5"
  layers = "0-5"
  [[parallel.replica.stage]]
  devices = "gpu-node-0:6-7"
  layers = "6-11"
)";
  std::string text = to_toml(shorthand.config);
  text = text.substr(0, text.find("[[parallel.replica]]")) + explicit_groups;
  // micro_batch 4 comes from [training]; the explicit replicas inherit it too.
  LoadedConfig written = load_job_config_text(text, "explicit.toml", {});
  require_same_job(shorthand.config, written.config);
}

TEST_CASE("shorthand order decides which devices form tp groups and stages", "[configs]") {
  const std::string path = HETU_SOURCE_DIR "/configs/gpt2-124m-dp2-tp2-pp2.toml";
  // tp outermost: device i has dp rank i % 2, pp rank (i / 2) % 2, tp rank i / 4.
  LoadedConfig loaded = load_job_config(path, {"parallel.order=\"tp-pp-dp\""});
  const auto& r = loaded.config.parallel.replicas;
  REQUIRE(r.size() == 2);
  CHECK(r[0].stages[0] == stage("gpu-node-0:0,4", "0-5"));
  CHECK(r[0].stages[1] == stage("gpu-node-0:2,6", "6-11"));
  CHECK(r[1].stages[0] == stage("gpu-node-0:1,5", "0-5"));
  CHECK(r[1].stages[1] == stage("gpu-node-0:3,7", "6-11"));
  CHECK(loaded.warnings.empty());
}

TEST_CASE("uneven pipeline split gives the extra layers to the first stages", "[configs]") {
  LoadedConfig loaded = load_job_config(HETU_SOURCE_DIR "/configs/gpt2-124m-dp2-tp2-pp2.toml",
                                        {"parallel.dp=1", "parallel.tp=1", "parallel.pp=5",
                                         "cluster.node[0].devices.count=5", "training.micro_batch=8"});
  const auto& stages = loaded.config.parallel.replicas.at(0).stages;
  REQUIRE(stages.size() == 5);
  CHECK(stages[0].layers == LayerRange{0, 2});
  CHECK(stages[1].layers == LayerRange{3, 5});
  CHECK(stages[2].layers == LayerRange{6, 7});
  CHECK(stages[3].layers == LayerRange{8, 9});
  CHECK(stages[4].layers == LayerRange{10, 11});
}

TEST_CASE("no parallel table means data parallelism over every device", "[configs]") {
  std::string text = to_toml(load_job_config(HETU_SOURCE_DIR "/configs/llama-tiny-cpu.toml", {}).config);
  text = text.substr(0, text.find("[[parallel.replica]]"));
  LoadedConfig loaded = load_job_config_text(text, "no_parallel.toml", {"cluster.node[0].devices.count=4"});
  REQUIRE(loaded.config.parallel.replicas.size() == 4);
  for (const auto& replica : loaded.config.parallel.replicas) CHECK(replica.stages.size() == 1);
  CHECK(loaded.config.replica_batch(3) == 4);
}

TEST_CASE("heterogeneous example: uneven shares, layers and tp per stage", "[configs]") {
  LoadedConfig loaded = load_job_config(HETU_SOURCE_DIR "/configs/llama-7b-hetero-a100-h100.toml", {});
  const JobConfig& c = loaded.config;
  REQUIRE(c.parallel.replicas.size() == 2);
  CHECK(c.replica_batch(0) == 32);  // 80 * 2/5
  CHECK(c.replica_batch(1) == 48);  // 80 * 3/5
  CHECK(c.replica_micro_batches(0) == 32);
  CHECK(c.replica_micro_batches(1) == 24);
  CHECK(c.parallel.replicas[0].stages[0].tp() == 4);
  CHECK(c.parallel.replicas[0].stages[2].layers == LayerRange{24, 31});
  CHECK(c.parallel.num_devices() == 12);
}

TEST_CASE("flavors have the published shapes", "[configs]") {
  // Parameter counts as published (HF model cards / config.json), vocab unpadded.
  CHECK(find_flavor(Arch::gpt2, "124m")->num_params() == 124'439'808);
  CHECK(find_flavor(Arch::gpt2, "350m")->num_params() == 354'823'168);
  CHECK(find_flavor(Arch::gpt2, "774m")->num_params() == 774'030'080);
  CHECK(find_flavor(Arch::llama, "7b")->num_params() == 6'738'415'616);
  CHECK(find_flavor(Arch::llama, "13b")->num_params() == 13'015'864'320);
  CHECK(find_flavor(Arch::llama, "1b")->num_params() == 1'235'814'400);  // Llama 3.2 1B
  CHECK(find_flavor(Arch::llama, "8b")->num_params() == 8'030'261'248);  // Llama 3.1 8B
  // Their rope_scaling as in the published config.json files (meta-llama/Llama-3.2-1B,
  // meta-llama/Llama-3.1-8B): rope_type llama3, factor 32 / 8, low 1, high 4, original 8192.
  const RopeScaling l32 = find_flavor(Arch::llama, "1b")->rope_scaling;
  CHECK(l32 == RopeScaling{RopeScalingType::llama3, 32.0, 1.0, 4.0, 8192});
  const RopeScaling l31 = find_flavor(Arch::llama, "8b")->rope_scaling;
  CHECK(l31 == RopeScaling{RopeScalingType::llama3, 8.0, 1.0, 4.0, 8192});
  for (const char* name : {"1b", "8b"}) {
    const ModelConfig m = *find_flavor(Arch::llama, name);
    CHECK(m.max_seq_len == 131072);
    CHECK(m.rope_theta == 500000.0);
    CHECK(m.norm_eps == 1e-5);
    CHECK(m.vocab == 128256);
    CHECK(m.head_dim() == (m.hidden == 2048 ? 64 : 128));
  }
  CHECK(find_flavor(Arch::llama, "7b")->rope_scaling.type == RopeScalingType::none);
  CHECK(find_flavor(Arch::gpt2, "124m")->padded_vocab() == 50304);
  // tiny flavors match the PyTorch fixtures (tests/make_reference_fixtures.sh).
  ModelConfig gpt2 = *find_flavor(Arch::gpt2, "tiny");
  CHECK((gpt2.layers == 2 && gpt2.hidden == 64 && gpt2.heads == 4 && gpt2.vocab == 256 && gpt2.max_seq_len == 64));
  ModelConfig llama = *find_flavor(Arch::llama, "tiny");
  CHECK((llama.kv_heads == 2 && llama.ffn_hidden == 176 && llama.rope_theta == 10000.0 && !llama.tie_embeddings));
  CHECK_FALSE(find_flavor(Arch::gpt2, "7b").has_value());
}

TEST_CASE("configs/gpt2-switch-cpu.toml names three strategies and the switches between them", "[configs]") {
  const LoadedConfig loaded = load_job_config(HETU_SOURCE_DIR "/configs/gpt2-switch-cpu.toml", {});
  const JobConfig& c = loaded.config;
  REQUIRE(c.strategies.size() == 3);
  REQUIRE(c.switches.size() == 3);
  CHECK(c.switches[0] == SwitchSection{3, "pp2-dp2"});
  CHECK(c.switches[2] == SwitchSection{9, "tp2-half"});
  CHECK(c.strategy_after(2) == "default");
  CHECK(c.strategy_after(6) == "hetero");
  CHECK(c.strategy_after(12) == "tp2-half");
  // The shorthand with `devices`: tp 2 over localhost:2-3 only.
  const ParallelSection& half = c.strategy("tp2-half");
  REQUIRE(half.replicas.size() == 1);
  CHECK(half.replicas[0].stages == std::vector<StageSection>{stage("localhost:2-3", "0-3")});
  const ParallelSection& hetero = c.strategy("hetero");
  REQUIRE(hetero.replicas.size() == 2);
  CHECK(hetero.replicas[0].stages == std::vector<StageSection>{stage("localhost:0-1", "0-3")});
  CHECK(hetero.replicas[1].stages == std::vector<StageSection>{stage("localhost:2", "0-1"), stage("localhost:3", "2-3")});
  CHECK(c.strategy_devices().size() == 4);
  const std::string resolved = to_toml(c);
  CHECK_THAT(resolved, Catch::Matchers::Contains("[[parallel.strategy]]\nname = \"tp2-half\"\n"));
  CHECK_THAT(resolved, Catch::Matchers::Contains("[[parallel.switch]]\nat_step = 9\nstrategy = \"tp2-half\"\n"));
  CHECK_THAT(describe(c), Catch::Matchers::Contains(
                              "switches: default -> pp2-dp2 after step 3 -> hetero after step 6 -> tp2-half after step 9"));
}

TEST_CASE("parallel.zero = 1 survives the resolved form, shorthand and groups alike", "[configs]") {
  for (const char* file : {HETU_SOURCE_DIR "/configs/llama-tiny-cpu.toml",
                           HETU_SOURCE_DIR "/configs/layouts/gpt2-hetero-replicas.toml"}) {
    INFO(file);
    const LoadedConfig loaded = load_job_config(file, {"parallel.zero=1"});
    CHECK(loaded.config.parallel.zero == 1);
    const LoadedConfig again = load_job_config_text(to_toml(loaded.config), "resolved.toml", {});
    CHECK(again.config.parallel.zero == 1);
    require_same_job(loaded.config, again.config);
    CHECK(load_job_config(file, {}).config.parallel.zero == 0);
  }
}
