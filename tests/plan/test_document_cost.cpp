// Documents priced under a strategy (lib/plan/document_cost.h) against independent references:
// a micro-batch of documents against the catalogue estimate of each document as its own
// sequence (estimate_stage with the model's facts at that length, summed), the memory limit
// against predict_layout's peak of a micro-batch of the documents' rows, replicas of different
// speed and the switch cost worked out by hand.
#include <catch2/catch.hpp>

#include "lib/plan/document_cost.h"
#include "lib/plan/stage_estimate.h"

using namespace hetu::plan;
using hetu::pipeline::ScheduleKind;

namespace {

constexpr double kHidden = 64;

// A GPT-like model's facts at sequence length `seq_len`: matmuls 2 x 50,000 FLOPs per token and
// attention 4 x hidden x seq_len (as lib/plan/model_facts.cpp counts them).
ModelFacts facts_at(int64_t seq_len) {
  ModelFacts f;
  f.layers = 4;
  f.layer_params = 50000;
  f.first_params = 20000;
  f.last_params = 20000;
  f.layer_attention_flops_per_token = 4 * kHidden * static_cast<double>(seq_len);
  f.layer_forward_flops_per_token = 2 * f.layer_params + f.layer_attention_flops_per_token;
  f.head_forward_flops_per_token = 2 * f.last_params;
  f.layer_activation_bytes_per_token = 9000;
  f.layer_replicated_activation_bytes_per_token = 3000;
  f.workspace_bytes_per_token = 200;
  f.head_activation_bytes_per_token = 520;
  f.hidden_bytes_per_token = 4 * kHidden;
  return f;
}

DeviceRates rates(double flops_per_s) {
  DeviceRates r;
  r.flops_per_s = flops_per_s;
  r.memory_bytes_per_s = 1e9;
  r.tp = {2e8, 0};          // no latency: every message is linear in the tokens
  r.next_stage = {1e8, 0};
  return r;
}

// One stage of layers [first, last] at micro_batch x seq_len tokens.
StageCost stage_at(int64_t seq_len, int64_t micro_batch, int64_t first, int64_t last, int64_t tp, double flops) {
  return estimate_stage(facts_at(seq_len), {first, last, first == 0, last == 3, tp, micro_batch, seq_len, 1},
                        rates(flops));
}

// A strategy of `replicas` (stages per replica, priced at micro-batch 2 x 64 tokens).
DocumentStrategy strategy_of(std::vector<std::vector<StageCost>> replicas, std::vector<double> shares,
                             double memory = 0) {
  DocumentStrategy s;
  s.name = std::string("strategy");
  s.priced_seq_len = 64;
  s.row_tokens = 64;
  for (size_t r = 0; r < replicas.size(); ++r) {
    DocumentReplica replica;
    replica.share = shares[r];
    replica.stages = replicas[r];
    replica.memory_bytes.assign(replica.stages.size(), memory);
    replica.priced_tokens = 128;
    replica.micro_batch_tokens = 128;
    s.replicas.push_back(replica);
  }
  return s;
}

}  // namespace

TEST_CASE("document cost: a micro-batch of documents is the sum of each as its own sequence", "[document_cost]") {
  for (int64_t tp : {1, 2}) {
    for (auto [first, last] : {std::pair<int64_t, int64_t>{0, 1}, {2, 3}, {0, 3}}) {
      const StageCost priced = stage_at(64, 2, first, last, tp, 1e9);
      const DocumentStrategy s = strategy_of({{priced}}, {1});
      // Documents of 100, 17 and 5 tokens in one micro-batch of 122.
      double forward = 0, backward = 0, send = 0;
      for (int64_t length : {100, 17, 5}) {
        const StageCost alone = stage_at(length, 1, first, last, tp, 1e9);
        forward += alone.times.forward_s;
        backward += alone.times.backward_s;
        send += alone.times.send_s;
      }
      const StageTimes t = micro_batch_times(s, 0, 0, 122, 100 * 100 + 17 * 17 + 5 * 5);
      CHECK(t.forward_s == Approx(forward).epsilon(1e-12));
      CHECK(t.backward_s == Approx(backward).epsilon(1e-12));
      CHECK(t.send_s == Approx(send).epsilon(1e-12));
    }
  }
}

TEST_CASE("document cost: documents fit when a micro-batch of their rows fits the device", "[document_cost]") {
  // One stage of the whole model, micro-batches of one row of 128 tokens; documents of up to
  // 64 tokens pack rows of 64 (lib/pipeline/bucket_rows.h). The peak as predict_layout gives
  // it for micro-batches of one sequence as long as the row, with the gradients held (a step
  // of two; a bucket's gradients accumulate with the others').
  const StageCost priced = stage_at(64, 2, 0, 3, 1, 1e9);
  auto peak_of_row = [](int64_t length) {
    return predict_layout({{ScheduleKind::one_f_one_b, 2, {stage_at(length, 1, 0, 3, 1, 1e9)}}}).peak_bytes[0][0];
  };
  const double memory = peak_of_row(64);
  DocumentStrategy s = strategy_of({{priced}}, {1}, memory);
  s.row_tokens = 128;
  DocumentLoad short_rows, long_rows;
  for (int64_t length : {64, 10, 33}) short_rows.add(length);
  long_rows.add(65);
  CHECK(peak_of_row(128) > memory);
  CHECK(load_fits(s, short_rows));
  CHECK(replica_part(s, 0, short_rows).micro_batches == 2);  // 107 tokens in rows of 64
  CHECK_FALSE(load_fits(s, long_rows));
  CHECK(load_time_s(s, long_rows) == kDocumentsDoNotFit);
  CHECK(max_fitting_tokens(s, 0, 1) == 64);
  DocumentLoad longer_than_a_row;  // 129 > the rows of 128, memory unbounded
  longer_than_a_row.add(129);
  DocumentStrategy unbounded = strategy_of({{priced}}, {1});
  unbounded.row_tokens = 128;
  CHECK_FALSE(load_fits(unbounded, longer_than_a_row));
}

TEST_CASE("document cost: replicas of different speed run their shares side by side", "[document_cost]") {
  // Replica 0 (share 1) at 1 GFLOP/s, replica 1 (share 3) at 2 GFLOP/s; 8 documents of 64
  // tokens = 512 tokens: replica 0 gets 128 (one micro-batch of two documents), replica 1 384
  // (three micro-batches of two): 3 x (F + B) of two documents each.
  const DocumentStrategy s = strategy_of({{stage_at(64, 2, 0, 3, 1, 1e9)}, {stage_at(64, 2, 0, 3, 1, 2e9)}}, {1, 3});
  DocumentLoad load;
  for (int i = 0; i < 8; ++i) load.add(64);
  const StageCost slow = stage_at(64, 2, 0, 3, 1, 1e9), fast = stage_at(64, 2, 0, 3, 1, 2e9);
  const double replica0 = slow.times.forward_s + slow.times.backward_s;
  const double replica1 = 3 * (fast.times.forward_s + fast.times.backward_s);
  CHECK(load_time_s(s, load) == Approx(std::max(replica0, replica1)).epsilon(1e-12));
  CHECK(replica_part(s, 1, load).micro_batches == 3);
  DocumentLoad none;
  CHECK(load_time_s(s, none) == 0);
}

TEST_CASE("document cost: a two-stage pipeline of documents and the switch cost", "[document_cost]") {
  // 1F1B over layers 0-1 and 2-3, 6 documents of 64 tokens: 3 micro-batches of two documents.
  const StageCost a = stage_at(64, 2, 0, 1, 1, 1e9), b = stage_at(64, 2, 2, 3, 1, 1e9);
  DocumentStrategy s = strategy_of({{a, b}}, {1});
  s.switch_s = 0.25;
  DocumentLoad load;
  for (int i = 0; i < 6; ++i) load.add(64);
  const double pipeline = pipeline_time(ScheduleKind::one_f_one_b, 3, {a.times, b.times}).makespan_s;
  CHECK(load_time_s(s, load) == Approx(pipeline + 0.25).epsilon(1e-12));
  // Every device receives its parameters and sends their gradient: the larger stage's 2 x
  // (latency + bytes / bandwidth).
  Link link{1e6, 1e-3};
  const double bytes = std::max(a.param_bytes, b.param_bytes);
  CHECK(switch_estimate_s(s.replicas, link) == Approx(2 * (1e-3 + bytes / 1e6)));
  // A compute copy's buckets also sum its gradients over its replicas first: the slowest
  // stage's sync, then the switch; the strategy that holds the parameters pays neither.
  StageCost synced_a = a, synced_b = b;
  synced_a.grad_sync_s = 0.5;
  synced_b.grad_sync_s = 0.75;
  const std::vector<ReplicaCost> costs = {{ScheduleKind::one_f_one_b, 3, {synced_a, synced_b}}};
  const DocumentStrategy copy = document_strategy("copy", costs, {{0, 0}}, {2}, 64, &link);
  CHECK(copy.switch_s == Approx(0.75 + 2 * (1e-3 + bytes / 1e6)));
  CHECK(document_strategy("holder", costs, {{0, 0}}, {2}, 64, nullptr).switch_s == 0);
}

TEST_CASE("document cost: measured times split off attention by its FLOP share, or as measured", "[document_cost]") {
  // A profile that measured exactly the catalogue's compute (one device) splits like the
  // catalogue, at tp 1 and split over tp 2; a measured attention time is taken as it is.
  const ModelFacts f = facts_at(64);
  const double tokens = 128, flops = 1e9;
  DeviceRates measured = rates(flops);
  measured.measured = MeasuredTimes{};
  measured.measured->layer_forward_s = f.layer_forward_flops_per_token * tokens / flops;
  measured.measured->layer_backward_s = 2 * measured.measured->layer_forward_s;
  for (int64_t tp : {1, 2}) {
    const StageShape shape{1, 2, false, false, tp, 2, 64, 1};
    const StageCost catalogue = estimate_stage(f, shape, rates(flops));
    const StageCost from_profile = estimate_stage(f, shape, measured);
    CHECK(from_profile.attention_forward_s == Approx(catalogue.attention_forward_s).epsilon(1e-12));
    CHECK(from_profile.attention_backward_s == Approx(catalogue.attention_backward_s).epsilon(1e-12));
    CHECK(catalogue.attention_forward_s == Approx(2 * 4 * kHidden * 64 * tokens / static_cast<double>(tp) / flops));
  }
  const double forward = measured.measured->layer_forward_s, backward = measured.measured->layer_backward_s;
  measured.measured->layer_attention_forward_s = 0.25 * forward;
  measured.measured->layer_attention_backward_s = 0.5 * backward;
  const StageCost c = estimate_stage(f, {1, 2, false, false, 2, 2, 64, 1}, measured);
  CHECK(c.attention_forward_s == Approx(2 * 0.25 * forward / 2));  // 2 layers, split over tp 2
  CHECK(c.attention_backward_s == Approx(2 * 0.5 * backward / 2));
  // A measured attention time past the layer's own (a noisy difference) is held at the layer's.
  measured.measured->layer_attention_forward_s = 2 * forward;
  const StageCost capped = estimate_stage(f, {1, 2, false, false, 1, 2, 64, 1}, measured);
  CHECK(capped.attention_forward_s == Approx(2 * forward));  // 2 layers, each at most its whole time
  CHECK(capped.attention_forward_s <= capped.times.forward_s);
}

TEST_CASE("document cost: a compute copy's micro-batch sits beside the optimize strategy's state", "[document_cost]") {
  // The optimize strategy keeps the whole model on one device (f32 weight, gradient, AdamW's
  // two moments: 4 x its parameter bytes, plus the reserved memory); a tp-2 lane's device
  // holds that state, its copy's shard and that shard's gradient (2 x the shard's bytes) and
  // the micro-batch's activations. Reference: predict_layout's peak of the lane stage alone at
  // a micro-batch of the document, its own training state swapped for those.
  const StageCost held = stage_at(64, 2, 0, 3, 1, 1e9), lane_priced = stage_at(64, 2, 0, 3, 2, 1e9);
  const DocumentStrategy optimize = strategy_of({{held}}, {1});
  auto peak_as_copy = [&](int64_t length) {
    const StageCost alone = stage_at(length, 1, 0, 3, 2, 1e9);
    const double own_state = 4 * alone.param_bytes + alone.reserved_bytes;
    const double beside = 4 * held.param_bytes + held.reserved_bytes + 2 * alone.param_bytes;
    return predict_layout({{ScheduleKind::one_f_one_b, 2, {alone}}}).peak_bytes[0][0] - own_state + beside;
  };
  const double memory = peak_as_copy(64) / kComputeCopyMemoryShare;  // planned within that share
  DocumentStrategy lane = strategy_of({{lane_priced}}, {1}, memory);
  lane.row_tokens = 128;
  CHECK(max_fitting_tokens(lane, 0, 1) > 64);  // priced as if it held the parameters: more fit
  price_as_compute_copy(lane, optimize);
  CHECK(lane.replicas[0].resident_bytes == 4 * held.param_bytes + held.reserved_bytes);
  CHECK(peak_as_copy(65) > memory * kComputeCopyMemoryShare);
  CHECK(max_fitting_tokens(lane, 0, 1) == 64);
  DocumentLoad holds, too_long;  // rows of 64 and of 128
  holds.add(64);
  too_long.add(65);
  CHECK(load_fits(lane, holds));
  CHECK_FALSE(load_fits(lane, too_long));
}

TEST_CASE("document cost: a pipeline's documents must fit with its pipeline full", "[document_cost]") {
  // Two 1F1B stages; one document of 64 tokens is one micro-batch by its tokens, but rows hold
  // whole documents and replicas whole micro-batches, so the runtime may run more: the first
  // stage is checked holding two in flight (peak_bytes at a micro-batch of 128 tokens, the
  // gradients held), not one.
  const StageCost a = stage_at(64, 2, 0, 1, 1, 1e9), b = stage_at(64, 2, 2, 3, 1, 1e9);
  const double one_in_flight = peak_bytes(a, 1, 2), full = peak_bytes(a, 2, 2);
  REQUIRE(full > one_in_flight);
  REQUIRE(peak_bytes(b, 1, 2) <= one_in_flight);
  DocumentLoad one;
  one.add(64);
  DocumentStrategy between = strategy_of({{a, b}}, {1}, (one_in_flight + full) / 2);
  between.row_tokens = 64;
  CHECK(replica_part(between, 0, one).micro_batches == 0);
  CHECK_FALSE(load_fits(between, one));
  DocumentStrategy holds = strategy_of({{a, b}}, {1}, full);
  holds.row_tokens = 64;
  CHECK(load_fits(holds, one));
  CHECK(replica_part(holds, 0, one).micro_batches == 1);
}

TEST_CASE("document cost: a memory shortfall names the stage that cannot hold its micro-batches", "[document_cost]") {
  // The pipeline above: between one and two micro-batches in flight, stage 0 would need
  // peak_bytes with two in flight (the reference, from the cost model) and has the limit;
  // stage 1 holds its one. A global batch of 4 rows of 64 tokens of documents of 64: the same.
  const StageCost a = stage_at(64, 2, 0, 1, 1, 1e9), b = stage_at(64, 2, 2, 3, 1, 1e9);
  const double full = peak_bytes(a, 2, 2), limit = (peak_bytes(a, 1, 2) + full) / 2;
  DocumentLoad one;
  one.add(64);
  DocumentStrategy between = strategy_of({{a, b}}, {1}, limit);
  between.row_tokens = 64;
  const std::optional<MemoryShortfall> short_of = memory_shortfall(between, one);
  REQUIRE(short_of.has_value());
  CHECK(short_of->replica == 0);
  CHECK(short_of->stage == 0);
  CHECK(short_of->micro_batch_tokens == 128);
  CHECK(short_of->needed_bytes == Approx(full).epsilon(1e-12));
  CHECK(short_of->memory_bytes == limit);
  CHECK(memory_shortfall(between, full_batch_load(4, 64, 64)).has_value());
  DocumentStrategy holds = strategy_of({{a, b}}, {1}, full);
  holds.row_tokens = 64;
  CHECK_FALSE(memory_shortfall(holds, one).has_value());
  CHECK_FALSE(memory_shortfall(holds, full_batch_load(4, 64, 64)).has_value());
  // The second replica of a strategy whose first is unbounded.
  DocumentStrategy second = strategy_of({{a, b}, {a, b}}, {1, 1}, limit);
  second.row_tokens = 64;
  second.replicas[0].memory_bytes = {0, 0};
  const std::optional<MemoryShortfall> of_second = memory_shortfall(second, full_batch_load(4, 64, 64));
  REQUIRE(of_second.has_value());
  CHECK(of_second->replica == 1);
  CHECK(of_second->stage == 0);
  // Agrees with load_fits wherever the documents fit a micro-batch.
  for (const DocumentStrategy* s : {&between, &holds, &second}) {
    for (int64_t longest : {8, 16, 32, 64}) {
      const DocumentLoad load = full_batch_load(4, 64, longest);
      CHECK(memory_shortfall(*s, load).has_value() == !load_fits(*s, load));
    }
  }
}

TEST_CASE("document cost: a full global batch of documents of one length", "[document_cost]") {
  const DocumentLoad load = full_batch_load(4, 64, 16);
  CHECK(load.tokens == 256);
  CHECK(load.documents == 16);
  CHECK(load.square_tokens == 16 * 16 * 16);
  CHECK(load.longest == 16);
}
