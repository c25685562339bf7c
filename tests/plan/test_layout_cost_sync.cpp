// The gradient sync of a layout (Note [Hierarchical gradient sync], lib/plan/stage_estimate.cpp)
// against the collective's cost worked out by hand from the job's declared links: eight
// replicas on two 4-GPU nodes reduce within each node first and send a quarter each across,
// two replicas on two nodes are one ring between them, and replicas on one node never touch
// the network.
#include <catch2/catch.hpp>

#include <string>

#include "lib/config/config.h"
#include "lib/plan/layout_cost.h"

using namespace hetu;

namespace {

// gpt2, 4 layers, one stage per replica, on two nodes of 4 A100-80Gs with a declared network of
// 100 Gb/s and 10 us; `parallel`: the job's [parallel] groups.
config::LoadedConfig job(const std::string& parallel) {
  const std::string text = R"([model]
arch = "gpt2"
layers = 4
hidden = 256
heads = 4
vocab = 256
max_seq_len = 128

[data]
train = "train_*.bin"
tokenizer = "byte"

[training]
steps = 10
global_batch = 16
seq_len = 128
micro_batch = 2

[cluster]
[[cluster.node]]
host = "a"
devices = { type = "A100-80G", count = 4 }
link_gbps = 100
link_latency_us = 10
[[cluster.node]]
host = "b"
devices = { type = "A100-80G", count = 4 }
link_gbps = 100
link_latency_us = 10

)" + parallel;
  return config::load_job_config_text(text, "job.toml", {});
}

std::string replicas(const std::vector<std::string>& devices) {
  std::string out;
  for (const std::string& d : devices) out += "[[parallel.replica]]\n  [[parallel.replica.stage]]\n  devices = \"" + d + "\"\n";
  return out;
}

// The job's links: within a node the GPU assumption (150 GB/s, 5 us; lib/plan/layout_cost.cpp),
// between nodes the declared 12.5 GB/s, 10 us, shared by the node's devices sending at once.
constexpr double kWithinBps = 150e9, kWithinS = 5e-6, kBetweenBps = 12.5e9, kBetweenS = 10e-6;

}  // namespace

TEST_CASE("layout cost: replicas sharing a node sum their gradients there first", "[layout_cost]") {
  const plan::LayoutEstimate e = plan::estimate_layout(job(replicas({"a:0", "a:1", "a:2", "a:3", "b:0", "b:1", "b:2", "b:3"})));
  const double bytes = e.replicas[0].stages[0].param_bytes;
  REQUIRE(bytes > 0);
  // Reduce-scatter and all-gather among 4 (3 steps each of bytes / 4), then a ring of the
  // quarter over the 2 nodes (2 steps of bytes / 8), the node's 4 GPUs sending at once.
  const double hierarchical = 2 * 3 * (kWithinS + bytes / 4 / kWithinBps) + 2 * (kBetweenS + 4 * (bytes / 8) / kBetweenBps);
  const double one_ring = 2 * 7 * (kBetweenS + 4 * (bytes / 8) / kBetweenBps);
  CHECK(hierarchical < one_ring);
  CHECK(e.prediction.grad_sync_s == Approx(hierarchical));
}

TEST_CASE("layout cost: one replica to a node is one ring between them, one node a ring within", "[layout_cost]") {
  const plan::LayoutEstimate two = plan::estimate_layout(job(replicas({"a:0", "b:0"})));
  const double bytes = two.replicas[0].stages[0].param_bytes;
  CHECK(two.prediction.grad_sync_s == Approx(2 * (kBetweenS + bytes / 2 / kBetweenBps)));
  const plan::LayoutEstimate local = plan::estimate_layout(job(replicas({"a:0", "a:1"})));
  CHECK(local.prediction.grad_sync_s == Approx(2 * (kWithinS + bytes / 2 / kWithinBps)));
}
