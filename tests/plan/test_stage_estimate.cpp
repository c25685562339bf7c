// Catalogue estimates of a stage's cost (lib/plan/stage_estimate.h) against values worked
// out by hand from Note [Catalogue estimates], and a model's facts (lib/plan/model_facts.h)
// against GPT-2 124M's published per-layer parameter count.
#include <catch2/catch.hpp>

#include "lib/plan/stage_estimate.h"
#include "lib/util/error.h"

using namespace hetu;
using namespace hetu::plan;

namespace {

ModelFacts small_facts() {
  ModelFacts f;
  f.layers = 4;
  f.layer_params = 100;
  f.first_params = 50;
  f.last_params = 30;
  f.layer_forward_flops_per_token = 1000;
  f.head_forward_flops_per_token = 400;
  f.layer_activation_bytes_per_token = 8;
  f.layer_replicated_activation_bytes_per_token = 1;
  f.workspace_bytes_per_token = 4;
  f.replicated_workspace_bytes_per_token = 1;
  f.head_activation_bytes_per_token = 16;
  f.head_weight_grad_bytes = 10;
  f.hidden_bytes_per_token = 2;
  f.tp_all_reduces_per_layer = 2;
  return f;
}

DeviceRates rates() {
  DeviceRates r;
  r.flops_per_s = 600;
  r.memory_bytes_per_s = 1400;
  r.tp = {3, 0.5};
  r.next_stage = {6, 0.25};
  r.replicas = r.tied = {46, 1};
  return r;
}

}  // namespace

TEST_CASE("stage estimate: the last stage of a tp 2 pipeline, by hand", "[stage_estimate]") {
  // Layers 2-3 + LM head, tp 2, micro-batch 2 x 3 tokens, 3 replicas.
  const StageCost c = estimate_stage(small_facts(), {2, 3, false, true, 2, 2, 3, 3}, rates());
  // FLOPs: 2 layers x 1000 x 6 + 400 x 6 = 14400, / tp 2 / 600 = 12 s. tp all_reduce of
  // 12 bytes over 2: 2 x (0.5 + 6 / 3) = 5 s, x 2 per layer x 2 layers = 20 s.
  CHECK(c.times.forward_s == Approx(12 + 20));
  CHECK(c.times.backward_s == Approx(24 + 20));
  CHECK(c.times.send_s == 0);
  // Parameters 2 x 100 + 30 = 230 -> 4 x 230 / 2 = 460 bytes. Activations: 2 layers x 6 tokens
  // x (8 / tp 2 + 1 whole) = 60, and the head's 16 x 6 whole + weight gradient 10 / tp 2 = 101.
  // Workspace 6 x (4 / 2 + 1); the sync's buffer is the whole 460-byte shard (3 replicas).
  CHECK(c.param_bytes == Approx(460));
  CHECK(c.head_activation_bytes == Approx(101));
  CHECK(c.activation_bytes == Approx(60 + 101));
  CHECK(c.workspace_bytes == Approx(18));
  CHECK(c.sync_buffer_bytes == Approx(460));
  // Sync: ring over 3 of 460 bytes: 4 x (1 + 460 / 3 / 46); AdamW: 28 x 115 / 1400.
  CHECK(c.grad_sync_s == Approx(4 * (1 + 460.0 / 3 / 46)));
  CHECK(c.optimizer_s == Approx(28.0 * 115 / 1400));
}

TEST_CASE("stage estimate: a first stage sends its activation, and a tied one-stage model holds the head once",
          "[stage_estimate]") {
  const StageCost first = estimate_stage(small_facts(), {0, 1, true, false, 1, 2, 3, 1}, rates());
  CHECK(first.times.send_s == Approx(0.25 + 12.0 / 6));
  CHECK(first.times.forward_s == Approx(2 * 1000.0 * 6 / 600));  // tp 1: no all_reduce
  CHECK(first.param_bytes == Approx(4 * 250));
  CHECK(first.grad_sync_s == 0);                                   // one replica
  ModelFacts tied = small_facts();
  tied.head_shares_embedding = true;
  CHECK(estimate_stage(tied, {0, 3, true, true, 1, 1, 1, 1}, rates()).param_bytes == Approx(4 * 450));
  CHECK(estimate_stage(small_facts(), {0, 3, true, true, 1, 1, 1, 1}, rates()).param_bytes == Approx(4 * 480));
}

TEST_CASE("stage estimate: bad shapes are refused", "[stage_estimate]") {
  CHECK_THROWS_AS(estimate_stage(small_facts(), {2, 4, false, true, 1, 1, 1, 1}, rates()), UsageError);
  CHECK_THROWS_AS(estimate_stage(small_facts(), {0, 1, true, false, 0, 1, 1, 1}, rates()), UsageError);
  CHECK(ring_all_reduce_s(1e9, 1, {1, 1}) == 0);
}

TEST_CASE("stage estimate: measured times replace the FLOP-based compute, split over tp", "[stage_estimate]") {
  DeviceRates measured = rates();
  measured.measured = MeasuredTimes{3, 5, 1, 2, 7, 11};
  // The last stage of the first case: 2 layers + head, tp 2, tp all_reduces 20 s as before.
  const StageCost c = estimate_stage(small_facts(), {2, 3, false, true, 2, 2, 3, 3}, measured);
  CHECK(c.times.forward_s == Approx((2 * 3 + 7) / 2.0 + 20));
  CHECK(c.times.backward_s == Approx((2 * 5 + 11) / 2.0 + 20));
  // A whole model on one device: embedding + 4 layers + head.
  const StageCost whole = estimate_stage(small_facts(), {0, 3, true, true, 1, 2, 3, 1}, measured);
  CHECK(whole.times.forward_s == Approx(1 + 4 * 3 + 7));
  CHECK(whole.times.backward_s == Approx(2 + 4 * 5 + 11));
  CHECK(whole.param_bytes == Approx(4 * 480));  // memory stays estimated
}

TEST_CASE("stage estimate: a profile of the stage's tp group, its optimizer and memory, by hand", "[stage_estimate]") {
  DeviceRates measured = rates();
  MeasuredTimes times{3, 5, 1, 2, 7, 11};
  times.includes_tp = true;       // per device of the tp 2 group, tp collectives included
  times.optimizer_s = 0.9;       // the whole model's step: 4 x 100 + 50 + 30 = 480 parameters
  measured.measured = times;
  measured.measured_memory = MeasuredMemory{10, 20, 40, 1000};
  // The last stage of the first case: layers 2-3 + head, tp 2, 3 replicas.
  const StageCost c = estimate_stage(small_facts(), {2, 3, false, true, 2, 2, 3, 3}, measured);
  CHECK(c.times.forward_s == Approx(2 * 3 + 7));    // no split over tp, no estimated all_reduce
  CHECK(c.times.backward_s == Approx(2 * 5 + 11));
  CHECK(c.optimizer_s == Approx(0.9 * 230 / 480));  // its 230 of the model's 480 parameters
  CHECK(c.activation_bytes == Approx(2 * 10 + 40));
  CHECK(c.reserved_bytes == Approx(1000));
  CHECK(c.workspace_bytes == Approx(6 * (4 / 2 + 1)));  // still estimated: one layer's backward, 6 tokens
}

TEST_CASE("stage estimate: replicas sharing a node sum their gradients there first", "[stage_estimate]") {
  // Layers 1-2 (800 bytes), 8 replicas, 4 to a node: a reduce-scatter and an all-gather within
  // (3 steps each of 200 bytes at 100 B/s, latency 0.5) and a ring over the 2 nodes of the
  // 200-byte share (2 steps of 100 bytes on the 46 B/s link, latency 1).
  DeviceRates r = rates();
  r.replicas_per_node = 4;
  r.replicas_within = {100, 0.5};
  const double hierarchical = 2 * 3 * (0.5 + 200.0 / 100) + 2 * (1 + 100.0 / 46);
  CHECK(estimate_stage(small_facts(), {1, 2, false, false, 1, 1, 1, 8}, r).grad_sync_s == Approx(hierarchical));
  // One to a node: the flat ring over 8 members on the link between nodes.
  CHECK(estimate_stage(small_facts(), {1, 2, false, false, 1, 1, 1, 8}, rates()).grad_sync_s ==
        Approx(14 * (1 + 100.0 / 46)));
  // A node link slower than the network (PCIe under a fast NIC): the one ring is cheaper
  // (2 x 3 x (1 + 200 / 30) + 2 x (1 + 100 / 46) = 52.3 s), and taken.
  r.replicas_within = {30, 1};
  CHECK(estimate_stage(small_facts(), {1, 2, false, false, 1, 1, 1, 8}, r).grad_sync_s == Approx(14 * (1 + 100.0 / 46)));
  // All on one node: a ring within it.
  r.replicas_within = {100, 0.5};
  r.replicas_per_node = 8;
  CHECK(estimate_stage(small_facts(), {1, 2, false, false, 1, 1, 1, 8}, r).grad_sync_s == Approx(14 * (0.5 + 100.0 / 100)));
}

TEST_CASE("stage estimate: tied embeddings split over stages sum over both ends of every replica", "[stage_estimate]") {
  ModelFacts tied = small_facts();
  tied.head_shares_embedding = true;
  // Last stage, tp 1, 3 replicas: 2 x 100 + 30 parameters = 920 bytes, of which the shared
  // 30 (120 bytes) sum over 6 members: 4 x (1 + 800 / 3 / 46) + 10 x (1 + 120 / 6 / 46).
  const StageCost last = estimate_stage(tied, {2, 3, false, true, 1, 1, 1, 3}, rates());
  CHECK(last.grad_sync_s == Approx(4 * (1 + 800.0 / 3 / 46) + 10 * (1 + 120.0 / 6 / 46)));
  // One replica: the first stage still sums the shared matrix with the last: 2 x (1 + 120 / 2 / 46).
  const StageCost first = estimate_stage(tied, {0, 1, true, false, 1, 1, 1, 1}, rates());
  CHECK(first.grad_sync_s == Approx(2 * (1 + 120.0 / 2 / 46)));
  // A middle stage and a one-stage model do not.
  CHECK(estimate_stage(tied, {1, 2, false, false, 1, 1, 1, 1}, rates()).grad_sync_s == 0);
  CHECK(estimate_stage(tied, {0, 3, true, true, 1, 1, 1, 1}, rates()).grad_sync_s == 0);
}
