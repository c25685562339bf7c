// The launch supervisor's pure parts (lib/launch/supervisor.h) against command lines written
// out by hand: mpirun's and srun's argv (--launcher-args, placement, a heterogeneous job's
// components), the placement of a relaunch (mpirun --host runs, srun's host file), and the
// option checks that end a launch before anything runs.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "lib/config/config.h"
#include "lib/launch/supervisor.h"
#include "lib/util/build_info.h"
#include "lib/util/error.h"
#include "tests/temp_dir.h"
#include "tests/usage_error.h"

using namespace hetu;
using namespace hetu::launch;

namespace {

using Words = std::vector<std::string>;

}  // namespace

TEST_CASE("supervisor: mpirun's command line with placement and --launcher-args", "[supervisor]") {
  SupervisorOptions o;
  o.launcher_args = "--bind-to none  -x FOO";
  const Words train{"hetu", "train", "job.toml"};
  CHECK(launcher_argv(o, 3, {}, {}, train) == Words{"mpirun", "-np", "3", "--bind-to", "none", "-x", "FOO", "hetu", "train", "job.toml"});
  CHECK(launcher_argv(o, 3, {"--host", "a:2,b:1"}, {}, train) ==
        Words{"mpirun", "-np", "3", "--host", "a:2,b:1", "--bind-to", "none", "-x", "FOO", "hetu", "train", "job.toml"});
}

TEST_CASE("supervisor: srun's command line, one component per group of a heterogeneous job", "[supervisor]") {
  SupervisorOptions o;
  o.launcher = "srun";
  const Words train{"hetu", "train", "job.toml"};
  CHECK(launcher_argv(o, 4, {"--distribution=arbitrary"}, {}, train) ==
        Words{"srun", "-n", "4", "--kill-on-bad-exit=0", "--distribution=arbitrary", "hetu", "train", "job.toml"});
  const std::vector<HetGroupTasks> het{{0, 2}, {1, 1}};
  CHECK(launcher_argv(o, 3, {}, het, train) ==
        Words{"srun", "--het-group=0", "-n", "2", "--kill-on-bad-exit=0", "hetu", "train", "job.toml", ":",
              "--het-group=1", "-n", "1", "--kill-on-bad-exit=0", "hetu", "train", "job.toml"});
}

TEST_CASE("supervisor: a relaunch's placement, as mpirun host runs or srun's host file", "[supervisor]") {
  hetu::test::TempDir dir("supervisor_placement");
  SupervisorOptions o;
  std::map<std::string, std::string> env;
  CHECK(placement_args(o, {}, dir.file("hosts"), env).empty());  // the launcher's own placement
  CHECK(placement_args(o, {"a", "a", "b", "a"}, dir.file("hosts"), env) == Words{"--host", "a:2,b:1,a:1"});
  CHECK(env.empty());
  o.launcher = "srun";
  CHECK(placement_args(o, {"a", "a", "b"}, dir.file("hosts"), env) == Words{"--distribution=arbitrary"});
  CHECK(env == std::map<std::string, std::string>{{"SLURM_HOSTFILE", dir.file("hosts")}});
  std::ifstream in(dir.file("hosts"));
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str() == "a\na\nb\n");
}

TEST_CASE("supervisor: the launcher, --np and --min-np are checked before anything runs", "[supervisor]") {
  SupervisorOptions o;
  o.np = 2;
  o.launcher = "torchrun";
  CHECK(test::usage_error_message([&] { check_supervisor_options(o); }) == "launch: --launcher must be mpirun or srun, got 'torchrun'");
  o.launcher = "srun";
  o.min_np = 3;
  CHECK(test::usage_error_message([&] { check_supervisor_options(o); }) == "launch: need 1 <= --min-np <= --np, got --np 2 --min-np 3");
  o.min_np = 1;
  CHECK(test::usage_error_message([&] { check_supervisor_options(o); }) == "(no usage error)");
  // The embedded quickstart job: one CPU device.
  const config::LoadedConfig loaded = config::load_job_config_text(default_job_toml(), "t.toml", {});
  REQUIRE(loaded.config.strategy_devices().size() == 1);
  CHECK(test::usage_error_message([&] { check_supervisor_job(o, loaded.config); }) ==
        "launch: --np 2 but the [parallel] groups of t.toml name 1 device(s)");
  o.np = 1;
  CHECK(test::usage_error_message([&] { check_supervisor_job(o, loaded.config); }) == "(no usage error)");
}
