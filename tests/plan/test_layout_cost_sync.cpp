// The gradient sync of a layout (Note [Hierarchical gradient sync], lib/plan/stage_estimate.cpp)
// against the collective's cost worked out by hand from the job's declared links: eight
// replicas on two 4-GPU nodes reduce within each node first and send a quarter each across,
// two replicas on two nodes are one ring between them, and replicas on one node never touch
// the network; a tp group over two nodes pays its all_reduces on the link between them.
#include <catch2/catch.hpp>

#include <string>

#include "lib/config/config.h"
#include "lib/plan/layout_cost.h"

using namespace hetu;

namespace {

// gpt2, 4 layers, one stage per replica, on two nodes of 4 A100-80Gs with a declared network of
// `gbps` Gb/s and 10 us; `parallel`: the job's [parallel] groups.
config::LoadedConfig job(const std::string& parallel, int gbps = 100) {
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
link_gbps = )" + std::to_string(gbps) + R"(
link_latency_us = 10
[[cluster.node]]
host = "b"
devices = { type = "A100-80G", count = 4 }
link_gbps = )" + std::to_string(gbps) + R"(
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

TEST_CASE("layout cost: a tp group over two nodes pays its all_reduces on the link between them", "[layout_cost]") {
  // One stage of tp 4 over a:0-1 and b:0-1: each layer's 2 forward all_reduces of the hidden
  // activation (2 x 128 tokens x 256 x 4 bytes) are rings of 4 crossing the nodes' link, so
  // only the network's speed separates two such jobs: 4 layers x 2 x 6 steps of 1/4 of it.
  const std::string stage = "[[parallel.replica]]\n  [[parallel.replica.stage]]\n  devices = \"a:0-1; b:0-1\"\n";
  const plan::LayoutEstimate slow = plan::estimate_layout(job(stage, 10));
  const plan::LayoutEstimate fast = plan::estimate_layout(job(stage, 100));
  const double slice = 2.0 * 128 * 256 * 4 / 4;
  const double expected = 4 * 2 * 6 * (slice / 1.25e9 - slice / kBetweenBps);
  CHECK(slow.replicas[0].stages[0].times.forward_s - fast.replicas[0].stages[0].times.forward_s == Approx(expected));
}
