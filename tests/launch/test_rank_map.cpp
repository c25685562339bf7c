// Rank -> device mapping by host name and local index, the parallel layout built from the
// [parallel] groups, each against hand-written expectations.
#include <catch2/catch.hpp>

#include <fstream>

#include "lib/config/config.h"
#include "lib/launch/rank_map.h"
#include "lib/util/error.h"

using namespace hetu;
using namespace hetu::launch;

namespace {

config::JobConfig job(const std::string& cluster_and_parallel) {
  const std::string text = std::string(R"(
[job]
name = "t"
[model]
arch = "gpt2"
layers = 4
hidden = 64
heads = 4
vocab = 256
max_seq_len = 32
[data]
train = "x_*.bin"
tokenizer = "byte"
[training]
steps = 2
global_batch = 8
seq_len = 16
)") + cluster_and_parallel;
  return config::load_job_config_text(text, "t.toml", {}).config;
}

const char* kTwoHosts = R"(
[cluster]
[[cluster.node]]
host = "gpu-a"
devices = { type = "cpu", count = 2 }
[[cluster.node]]
host = "gpu-b"
devices = { type = "cpu", count = 2 }
[[parallel.replica]]
batch_share = 1
micro_batch = 2
  [[parallel.replica.stage]]
  devices = "gpu-b:0-1"
  layers = "0-1"
  [[parallel.replica.stage]]
  devices = "gpu-a:1"
  layers = "2-3"
[[parallel.replica]]
batch_share = 3
micro_batch = 3
  [[parallel.replica.stage]]
  devices = "gpu-a:0"
)";

}  // namespace

TEST_CASE("ranks map to devices by host and local index", "[rank_map]") {
  const config::JobConfig c = job(kTwoHosts);
  // Ranks 0 and 2 run on gpu-b (local 0, 1), ranks 1 and 3 on gpu-a; a fully qualified name matches.
  const RankMap map = map_ranks(c, {"gpu-b", "gpu-a.cluster.local", "gpu-b", "gpu-a"});
  CHECK(map.device_of_rank[0] == config::DeviceId{"gpu-b", 0});
  CHECK(map.device_of_rank[1] == config::DeviceId{"gpu-a", 0});
  CHECK(map.device_of_rank[2] == config::DeviceId{"gpu-b", 1});
  CHECK(map.device_of_rank[3] == config::DeviceId{"gpu-a", 1});

  const pipeline::ParallelLayout layout = parallel_layout(c, map);
  REQUIRE(layout.replicas.size() == 2);
  CHECK(layout.replicas[0].stages[0].devices == DeviceGroup({0, 2}));
  CHECK(layout.replicas[0].stages[1].devices == DeviceGroup({3}));
  CHECK(layout.replicas[0].stages[1].first_layer == 2);
  CHECK(layout.replicas[1].stages[0].devices == DeviceGroup({1}));
  CHECK(layout.replicas[0].batch_offset == 0);
  CHECK(layout.replicas[0].batch == 2);
  CHECK(layout.replicas[1].batch_offset == 2);
  CHECK(layout.replicas[1].batch == 6);
  CHECK(layout.replicas[1].micro_batches() == 2);
  CHECK(layout.locate(2) == pipeline::Position{0, 0, 1});
  CHECK(layout.locate(1) == pipeline::Position{1, 0, 0});
}

TEST_CASE("localhost is the one machine the ranks run on", "[rank_map]") {
  const config::JobConfig c = job(R"(
[cluster]
[[cluster.node]]
host = "localhost"
devices = { type = "cpu", count = 2 }
[parallel]
dp = 2
)");
  const RankMap map = map_ranks(c, {"box7", "box7"});
  CHECK(map.rank_of_device.at({"localhost", 1}) == 1);
  CHECK_THROWS_WITH(map_ranks(c, {"box7", "box8"}), Catch::Contains("\"localhost\" is ambiguous"));
}

TEST_CASE("launched ranks that do not match the groups are named", "[rank_map]") {
  const config::JobConfig c = job(kTwoHosts);
  CHECK_THROWS_WITH(map_ranks(c, {"gpu-b", "gpu-a", "gpu-a", "gpu-a"}),
                    Catch::Contains("device gpu-b:1 of the [parallel] groups has no rank: 1 rank(s) were launched on host gpu-b"));
  CHECK_THROWS_WITH(map_ranks(c, {"gpu-b", "gpu-a", "gpu-b", "gpu-a", "gpu-c"}),
                    Catch::Contains("rank 4 on host gpu-c drives no device"));
}

TEST_CASE("rehearse: rank r drives the r-th device of the cluster in node order, wherever it runs", "[rank_map]") {
  // Made-up hosts "fast" (2 devices) and "slow" (1 device); every rank runs on this machine.
  const std::string cluster = R"(
[cluster]
rehearse = true
[[cluster.node]]
host = "fast"
devices = { type = "cpu", count = 2 }
[[cluster.node]]
host = "slow"
devices = { type = "cpu", count = 1 }
[[parallel.replica]]
  [[parallel.replica.stage]]
  devices = "slow:0"
[[parallel.replica]]
  [[parallel.replica.stage]]
  devices = "fast:0-1"
)";
  const config::JobConfig c = job(cluster);
  const RankMap map = map_ranks(c, {"box7", "box7", "box7"});
  CHECK(map.device_of_rank[0] == config::DeviceId{"fast", 0});
  CHECK(map.device_of_rank[1] == config::DeviceId{"fast", 1});
  CHECK(map.device_of_rank[2] == config::DeviceId{"slow", 0});
  CHECK(map.rank_of_device.at({"slow", 0}) == 2);
  // The machines the ranks run on do not matter.
  CHECK(map_ranks(c, {"a", "b", "c"}).device_of_rank == map.device_of_rank);
  // Too few ranks: the device without one is named.
  CHECK_THROWS_WITH(map_ranks(c, {"box7", "box7"}), Catch::Contains("device slow:0 of the [parallel] groups has no rank"));
  // Without rehearse the same job needs machines named fast and slow.
  config::JobConfig real = c;
  real.cluster.rehearse = false;
  CHECK_THROWS_WITH(map_ranks(real, {"box7", "box7", "box7"}), Catch::Contains("has no rank"));
  CHECK(map_ranks(real, {"slow", "fast", "fast"}).device_of_rank[0] == config::DeviceId{"slow", 0});
}

