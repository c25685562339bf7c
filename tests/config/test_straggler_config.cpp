// The [straggler] keys and a catalogue entry's emulate_slowdown_schedule: what loads (and
// round-trips through the resolved TOML), and what is refused with a message naming the key.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "lib/config/config.h"
#include "lib/util/error.h"
#include "tests/temp_dir.h"

namespace {

using hetu::config::load_job_config_text;

// configs/gpt2-tiny-cpu.toml's model and training on two CPU devices (of type cpu-b when
// `cluster` names a catalogue), [parallel] `parallel`, then `extra` (the table under test).
std::string job(const std::string& parallel, const std::string& extra, const std::string& cluster = "") {
  std::ifstream in(std::string(HETU_SOURCE_DIR) + "/configs/gpt2-tiny-cpu.toml");
  std::stringstream text;
  text << in.rdbuf();
  const std::string base = text.str();
  REQUIRE(base.find("\n[cluster]") != std::string::npos);
  return base.substr(0, base.find("\n[cluster]")) + "\n[cluster]\n" + cluster + "\n[[cluster.node]]\nhost = \"localhost\"\n" +
         "devices = { type = \"" + (cluster.empty() ? "cpu" : "cpu-b") + "\", count = 2 }\n[parallel]\n" + parallel + "\n" +
         extra;
}

std::string load_error(const std::string& toml) {
  try {
    load_job_config_text(toml, "/jobs/job.toml", {});
  } catch (const hetu::UsageError& e) {
    return e.what();
  }
  FAIL_CHECK("the job loaded");
  return "";
}

TEST_CASE("the straggler table loads with its defaults, resolves its profile and round-trips", "[straggler_config]") {
  const auto loaded = load_job_config_text(job("dp = 2", "[straggler]\nenabled = true\nprofile = \"p.toml\"\n"),
                                           "/jobs/job.toml", {});
  const hetu::config::StragglerSection& s = loaded.config.straggler;
  CHECK(s.enabled);
  CHECK(s.threshold == 1.2);
  CHECK(s.window == 5);
  CHECK(s.min_gain == 0.10);
  CHECK(s.profile == "/jobs/p.toml");
  const auto again = load_job_config_text(hetu::config::to_toml(loaded.config), "/jobs/job.toml", {});
  CHECK(again.config.straggler == s);
  const auto tuned = load_job_config_text(
      job("auto = true", "[straggler]\nenabled = true\nthreshold = 1.5\nwindow = 3\nmin_gain = 0.2\n"), "job.toml", {});
  CHECK(tuned.config.straggler.threshold == 1.5);
  CHECK(tuned.config.straggler.window == 3);
  CHECK(tuned.config.straggler.min_gain == 0.2);
  CHECK(load_job_config_text(job("dp = 2", ""), "job.toml", {}).config.straggler == hetu::config::StragglerSection{});
}

TEST_CASE("bad straggler keys name the key", "[straggler_config]") {
  using Catch::Matchers::Contains;
  CHECK_THAT(load_error(job("dp = 2", "[straggler]\nenabled = true\n")),
             Contains("straggler.enabled: re-plans with the cost model, which needs a profile: set [parallel] auto = "
                      "true, or straggler.profile"));
  CHECK_THAT(load_error(job("auto = true", "[straggler]\nenabled = true\nprofile = \"p.toml\"\n")),
             Contains("straggler.profile: [parallel] auto = true predicts from the profile it plans from"));
  CHECK_THAT(load_error(job("auto = true", "[straggler]\nthreshold = 1.0\n")),
             Contains("straggler.threshold: must be a number > 1, got 1"));
  CHECK_THAT(load_error(job("auto = true", "[straggler]\nwindow = 0\n")), Contains("straggler.window: must be >= 1, got 0"));
  CHECK_THAT(load_error(job("auto = true", "[straggler]\nmin_gain = -0.1\n")),
             Contains("straggler.min_gain: must be a number >= 0, got -0.1"));
  CHECK_THAT(load_error(job("auto = true", "[straggler]\nenable = true\n")), Contains("enable"));
  CHECK_THAT(load_error(job("dp = 2\n[[parallel.strategy]]\nname = \"b\"\ndp = 2\n[[parallel.switch]]\nat_step = 2\n"
                            "strategy = \"b\"", "[straggler]\nenabled = true\nprofile = \"p.toml\"\n")),
             Contains("straggler.enabled: cannot be combined with [[parallel.switch]]"));
}

TEST_CASE("emulate_slowdown_schedule: step and factor pairs in a CPU catalogue entry", "[straggler_config]") {
  using Catch::Matchers::Contains;
  hetu::test::TempDir dir("slowdown_schedule");
  auto with_entry = [&](const std::string& entry) {
    dir.write("catalog.toml", "[[device]]\nname = \"cpu-b\"\npeak_tflops_fp32 = 0.1\n" + entry);
    return job("dp = 2", "", "device_catalog = \"" + dir.file("catalog.toml") + "\"");
  };
  const auto loaded = load_job_config_text(
      with_entry("kind = \"cpu\"\nemulate_slowdown = 2\nemulate_slowdown_schedule = [[20, 3.0], [40, 1]]\n"), "job.toml", {});
  const hetu::config::DeviceProfile* type = loaded.catalog.find("cpu-b");
  REQUIRE(type != nullptr);
  CHECK(type->emulate_slowdown_schedule == std::vector<std::pair<int64_t, double>>{{20, 3.0}, {40, 1.0}});
  for (const char* bad : {"[[20, 3.0], [10, 1.0]]", "[[0, 2.0]]", "[[5, 0.5]]", "[[5]]", "[[2.5, 2.0]]"}) {
    CHECK_THAT(load_error(with_entry(std::string("kind = \"cpu\"\nemulate_slowdown_schedule = ") + bad + "\n")),
               Contains("device[0].emulate_slowdown_schedule: expected [[step, F], ...] with steps >= 1 increasing"));
  }
  CHECK_THAT(load_error(with_entry("kind = \"cpu\"\nemulate_slowdown_schedule = [1, 2]\n")),
             Contains("emulate_slowdown_schedule: expected an array of arrays of numbers"));
  CHECK_THAT(load_error(with_entry("kind = \"gpu\"\nemulate_slowdown_schedule = [[2, 2.0]]\n")),
             Contains("emulate_slowdown_schedule: only CPU kinds can emulate a slowdown"));
}

}  // namespace
