// hetu launch's pure parts: which rank the launcher says died (launch_failure.h), against
// messages copied from Open MPI 4.1 and Slurm, and the job it relaunches after losing a rank
// (launch_job.h; also for a job that switches strategies) and where a rehearsed node keeps its
// snapshots, against hand-written expectations.
#include <catch2/catch.hpp>

#include "lib/config/config.h"
#include "lib/launch/launch_failure.h"
#include "lib/launch/launch_job.h"
#include "lib/util/error.h"

using namespace hetu;
using namespace hetu::launch;

namespace {

std::optional<LaunchFailure> parse(const std::vector<std::string>& lines) {
  LaunchFailureParser p;
  for (const std::string& l : lines) p.feed(l);
  return p.failure();
}

config::JobConfig job(const std::string& tail) {
  return config::load_job_config_text(R"(
[job]
name = "t"
[model]
arch = "gpt2"
layers = 2
hidden = 32
heads = 2
vocab = 256
max_seq_len = 16
[data]
train = "x_*.bin"
tokenizer = "byte"
[training]
steps = 2
global_batch = 12
seq_len = 16
[cluster]
[[cluster.node]]
host = "a"
devices = { type = "cpu", count = 2 }
[[cluster.node]]
host = "b"
devices = { type = "cpu", count = 1 }
)" + tail, "t.toml", {}).config;
}

}  // namespace

// After a hang the rank whose deadline expired aborts the job, and mpirun reports that rank;
// the rank the deadline names as stopped is the lost one (lines as comm_deadline logs them).
TEST_CASE("launch: after a hang, the rank a communication deadline names as stopped", "[launch]") {
  const std::string deadline = "[2026-12-01 21:04:11.204] [rank 0] [error] communication timed out: all_reduce at "
                               "step 7 on rank 0 waited 20 s for rank(s) 2, 1; rank(s) 1, 2 stopped answering (no "
                               "reply to a ping within 5 s); aborting the job (exit code 3)";
  const std::string abort = "MPI_ABORT was invoked on rank 0 in communicator MPI_COMM_WORLD";
  for (const auto& lines : {std::vector<std::string>{deadline, abort}, std::vector<std::string>{abort, deadline},
                            std::vector<std::string>{"  Process name: [[36278,1],0]", "  Exit code:    3", deadline}}) {
    auto f = parse(lines);
    REQUIRE(f);
    CHECK(f->rank == 1);
    CHECK(f->stopped);
    CHECK(f->exit_code == 3);
  }
  // A deadline whose peers all answer names no stopped rank: the launcher's report stands.
  auto none = parse({"[rank 2] [error] communication timed out: send at step 3 on rank 2 waited 20 s for rank(s) 0, "
                     "but every rank answers a ping: the ranks wait for each other", abort});
  REQUIRE(none);
  CHECK(none->rank == 0);
  CHECK_FALSE(none->stopped);
  // The first stopped rank named wins over a later deadline's line (another rank's view).
  auto first = parse({deadline, "[rank 1] [error] communication timed out: recv at step 7 on rank 1 waited 20 s for "
                                "rank(s) 2; rank(s) 2 stopped answering (no reply to a ping within 5 s)"});
  REQUIRE(first);
  CHECK(first->rank == 1);
}

TEST_CASE("launch: the first rank the launcher reports dead", "[launch]") {
  auto killed = parse({"noise", "mpirun noticed that process rank 2 with PID 0 on node vm exited on signal 9 (Killed).",
                       "mpirun noticed that process rank 0 with PID 0 on node vm exited on signal 15 (Terminated)."});
  REQUIRE(killed);
  CHECK(killed->rank == 2);
  CHECK(killed->signal == 9);
  auto exited = parse({"  Process name: [[36278,1],3]", "  Exit code:    2"});
  REQUIRE(exited);
  CHECK(exited->rank == 3);
  CHECK(exited->signal == 0);
  CHECK(exited->exit_code == 2);
  auto aborted = parse({"MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD"});
  REQUIRE(aborted);
  CHECK(aborted->rank == 1);
  auto srun = parse({"srun: error: node7: task 5: Exited with exit code 1", "srun: error: node7: task 4: Killed"});
  REQUIRE(srun);
  CHECK(srun->rank == 5);
  CHECK(srun->exit_code == 1);
  CHECK_FALSE(parse({"step 3/20 | loss 4.2", "Exit code: 1"}));
}

TEST_CASE("launch: the relaunched job drops the dead rank's device and plans at launch", "[launch]") {
  const config::JobConfig c = job("[parallel]\ndp = 3\n");
  const config::JobConfig second = job_without_device(c, 1, "/p/profile.toml");  // a's second device
  REQUIRE(second.cluster.nodes.size() == 2);
  CHECK(second.cluster.nodes[0].count == 1);
  CHECK(second.cluster.nodes[1].count == 1);
  CHECK(second.parallel.auto_plan);
  CHECK(second.parallel.replicas.empty());
  CHECK(second.parallel.profile == "/p/profile.toml");
  CHECK(second.checkpoint.resume == "auto");
  const config::JobConfig third = job_without_device(second, 1, "");  // b's only device: the node goes
  REQUIRE(third.cluster.nodes.size() == 1);
  CHECK(third.cluster.nodes[0].host == "a");
  CHECK(third.cluster.nodes[0].count == 1);
  // The derived job is a valid job file.
  CHECK(config::load_job_config_text(config::to_toml(third), "derived.toml", {}).config.cluster.num_devices() == 1);
  CHECK_THROWS_AS(job_without_device(c, 3, ""), UsageError);
  // Planned at launch, 3 devices take a global batch of 8 (the planner picks uneven shares).
  const std::string planned = config::to_toml(job_without_device(job("[[cluster.node]]\nhost = \"c\"\n"
                                                                     "devices = { type = \"cpu\", count = 1 }\n"
                                                                     "[parallel]\ndp = 4\n"), 3, ""));
  CHECK(config::load_job_config_text(planned, "derived.toml", {"training.global_batch=8"}).config.cluster.num_devices() == 3);
}

TEST_CASE("launch: a relaunch's ranks go to the hosts of the derived cluster, in node order", "[launch]") {
  const config::JobConfig c = job("[parallel]\ndp = 3\n");
  CHECK(rank_hosts(c) == std::vector<std::string>{"a", "a", "b"});
  CHECK(rank_hosts(job_without_device(c, 0, "")) == std::vector<std::string>{"a", "b"});
  config::JobConfig rehearsed = c;
  rehearsed.cluster.rehearse = true;
  CHECK(rank_hosts(rehearsed).empty());
}

TEST_CASE("launch: each rehearsed node keeps its snapshots under its own root", "[launch]") {
  config::JobConfig c = job("[parallel]\ndp = 3\n");
  CHECK(node_state_dir(c, 2, "/dev/shm/hetu-r/attempt-1") == "/dev/shm/hetu-r/attempt-1");  // a real node's /dev/shm
  c.cluster.rehearse = true;
  CHECK(node_state_dir(c, 0, "/dev/shm/hetu-r/attempt-1") == "/dev/shm/hetu-r/node-a/attempt-1");
  CHECK(node_state_dir(c, 1, "/dev/shm/hetu-r/attempt-1") == "/dev/shm/hetu-r/node-a/attempt-1");
  CHECK(node_state_dir(c, 2, "/dev/shm/hetu-r/attempt-1") == "/dev/shm/hetu-r/node-b/attempt-1");
  CHECK(node_state_dir(c, 0, "") == "");  // no snapshots (plain hetu train)
  CHECK_THROWS_AS(node_state_dir(c, 3, "/dev/shm/hetu-r/attempt-1"), UsageError);
}

TEST_CASE("launch: a job that switches strategies is relaunched on one re-planned layout", "[launch]") {
  const config::JobConfig c = job("[parallel]\ndp = 3\n[[parallel.strategy]]\nname = \"half\"\ntp = 2\n"
                                  "devices = \"a:0-1\"\n[[parallel.switch]]\nat_step = 1\nstrategy = \"half\"\n");
  CHECK(dropped_layout_note(c) ==
        "the 1 [[parallel.strategy]] (half) and the [[parallel.switch]] list (after step 1 to half)");
  CHECK(dropped_layout_note(job("[parallel]\ndp = 3\n")).empty());
  const config::JobConfig next = job_without_device(c, 0, "");  // a device "half" names
  CHECK(next.strategies.empty());
  CHECK(next.switches.empty());
  CHECK(next.parallel.auto_plan);
  CHECK(dropped_layout_note(next).empty());
  const config::JobConfig reloaded = config::load_job_config_text(config::to_toml(next), "derived.toml", {}).config;
  CHECK(reloaded.strategies.empty());
  CHECK(reloaded.cluster.num_devices() == 2);
}
