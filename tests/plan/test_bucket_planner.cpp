// The bucket planner (lib/plan/bucket_planner.h) against an exhaustive enumeration of every
// bucketing and strategy assignment of small batches (priced exactly by load_time_s), its
// tabulated prices against load_time_s, the plan's contract, cases where the attention term,
// a memory limit, the switch cost or a fixed cost per micro-batch (hand-computed plans) decide
// the plan, and its time for 1,000 documents.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

#include "lib/plan/bucket_planner.h"
#include "lib/util/error.h"

using namespace hetu;
using namespace hetu::plan;
using pipeline::ScheduleKind;

namespace {

constexpr double kPriced = 1024;  // every strategy's stages are priced at one sequence of 1,024 tokens

// A stage whose priced micro-batch takes `linear` + `attention` forward (twice that backward).
StageCost stage(double linear, double attention, double param_bytes = 1e6, double activation_bytes = 1e6,
                double send = 0) {
  StageCost c;
  c.times = {linear + attention, 2 * (linear + attention), send};
  c.attention_forward_s = attention;
  c.attention_backward_s = 2 * attention;
  c.param_bytes = param_bytes;
  c.activation_bytes = activation_bytes;
  return c;
}

DocumentStrategy strategy(const std::string& name, std::vector<std::vector<StageCost>> replicas,
                          std::vector<double> shares, double memory = 0, double switch_s = 0,
                          ScheduleKind schedule = ScheduleKind::one_f_one_b, int64_t micro_batch_tokens = 2048) {
  DocumentStrategy s;
  s.name = name;
  s.priced_seq_len = kPriced;
  s.row_tokens = micro_batch_tokens;  // micro-batches of one row
  s.switch_s = switch_s;
  for (size_t r = 0; r < replicas.size(); ++r) {
    DocumentReplica replica;
    replica.schedule = schedule;
    replica.share = shares[r];
    replica.stages = replicas[r];
    replica.memory_bytes.assign(replica.stages.size(), memory);
    replica.priced_tokens = kPriced;
    replica.micro_batch_tokens = micro_batch_tokens;
    s.replicas.push_back(replica);
  }
  return s;
}

// Three unlike strategies drawn from `rng`: two data-parallel replicas of different speed with
// little memory and no switch, one device with cheap attention (a tp group), a 2-3 stage
// pipeline; memories and switch costs drawn so that some buckets do not fit some strategies.
std::vector<DocumentStrategy> random_strategies(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.5, 1.5);
  std::vector<DocumentStrategy> out;
  // peak of one stage with m >= 2 micro-batches of t tokens: 4 P + in_flight x t / 1024 x A.
  const double dp_memory = 4e6 + u(rng) * 0.8e6;  // holds 400-1,200 tokens per micro-batch
  out.push_back(strategy("dp", {{stage(0.4 * u(rng), 0.8 * u(rng))}, {stage(0.8 * u(rng), 1.6 * u(rng))}}, {2, 1},
                         dp_memory, 0));
  out.push_back(strategy("tp", {{stage(0.7 * u(rng), 0.3 * u(rng), 0.5e6, 0.5e6)}}, {1}, 0, 0.2 * u(rng)));
  const int stages = 2 + static_cast<int>(rng() % 2);
  std::vector<StageCost> pp;
  for (int s = 0; s < stages; ++s) pp.push_back(stage(0.3 * u(rng), 0.3 * u(rng), 0.4e6, 0.4e6, 0.01 * u(rng)));
  out.push_back(strategy("pp", {pp}, {1}, 0, 0.1 * u(rng), rng() % 2 ? ScheduleKind::gpipe : ScheduleKind::one_f_one_b));
  return out;
}

// n lengths of 16-2,048 tokens, spread evenly in log (the small cases need long ones too).
std::vector<int64_t> log_uniform_lengths(std::mt19937_64& rng, int64_t n) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i) {
    out.push_back(static_cast<int64_t>(std::exp(std::uniform_real_distribution<double>(std::log(16), std::log(2048))(rng))));
  }
  return out;
}

// n long-tailed lengths of 32-2,048 tokens: P(L > x) ~ 1/x - 1/2048 (most short, a few long).
std::vector<int64_t> random_lengths(std::mt19937_64& rng, int64_t n) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i) {
    const double x = std::uniform_real_distribution<double>(0, 1)(rng);
    out.push_back(std::clamp<int64_t>(static_cast<int64_t>(32.0 / (1 - x * (1 - 32.0 / 2048))), 1, 2048));
  }
  return out;
}

// The documents of each bucket by the contract: the first bucket whose max_len >= L.
std::vector<DocumentLoad> bucket_loads(const BucketPlan& plan, const std::vector<int64_t>& lengths) {
  std::vector<DocumentLoad> loads(plan.buckets.size());
  for (int64_t l : lengths) {
    size_t b = 0;
    while (plan.buckets[b].max_len && *plan.buckets[b].max_len < l) ++b;
    loads[b].add(l);
  }
  return loads;
}

size_t index_of(const std::vector<DocumentStrategy>& strategies, const std::string& name) {
  for (size_t s = 0; s < strategies.size(); ++s)
    if (strategies[s].name == name) return s;
  FAIL("no strategy " << name);
  return 0;
}

// The plan's step priced exactly (load_time_s), and its contract checked.
double exact_step_s(const BucketPlan& plan, const std::vector<DocumentStrategy>& strategies,
                    const std::vector<int64_t>& lengths) {
  REQUIRE(!plan.buckets.empty());
  CHECK_FALSE(plan.buckets.back().max_len.has_value());
  for (size_t b = 0; b + 1 < plan.buckets.size(); ++b) {
    REQUIRE(plan.buckets[b].max_len.has_value());
    if (b > 0) CHECK(*plan.buckets[b].max_len > *plan.buckets[b - 1].max_len);
  }
  const std::vector<DocumentLoad> loads = bucket_loads(plan, lengths);
  double total = 0;
  for (size_t b = 0; b < loads.size(); ++b) {
    CHECK(loads[b].documents == plan.buckets[b].documents);
    CHECK(loads[b].documents > 0);
    const DocumentStrategy& s = strategies[index_of(strategies, plan.buckets[b].strategy)];
    CHECK(load_fits(s, loads[b]));
    total += load_time_s(s, loads[b]);
  }
  return total;
}

struct Best {
  double exact = kDocumentsDoNotFit, tabulated = kDocumentsDoNotFit;
};

// Every cut of the sorted distinct lengths into runs and every strategy for every run.
Best exhaustive(const BucketPlanner& planner, std::vector<int64_t> lengths) {
  std::sort(lengths.begin(), lengths.end());
  std::vector<int64_t> distinct = lengths;
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  const size_t d = distinct.size(), strategies = planner.strategies().size();
  Best best;
  for (uint64_t cuts = 0; cuts < (uint64_t{1} << (d - 1)); ++cuts) {
    std::vector<std::vector<int64_t>> runs(1);  // the documents of each run
    for (size_t g = 0; g < d; ++g) {
      for (int64_t l : lengths)
        if (l == distinct[g]) runs.back().push_back(l);
      if (g + 1 < d && (cuts >> g & 1)) runs.emplace_back();
    }
    std::vector<size_t> pick(runs.size(), 0);
    while (true) {
      double exact = 0, tabulated = 0;
      for (size_t r = 0; r < runs.size(); ++r) {
        DocumentLoad load;
        for (int64_t l : runs[r]) load.add(l);
        exact += load_time_s(planner.strategies()[pick[r]], load);
        tabulated += planner.bucket_s(pick[r], load);
      }
      best.exact = std::min(best.exact, exact);
      best.tabulated = std::min(best.tabulated, tabulated);
      size_t r = 0;
      while (r < pick.size() && ++pick[r] == strategies) pick[r++] = 0;
      if (r == pick.size()) break;
    }
  }
  return best;
}

}  // namespace

TEST_CASE("bucket planner: optimal against every bucketing of small batches", "[bucket_planner]") {
  std::mt19937_64 rng(20261201);
  int64_t multi_bucket = 0, mixed = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const std::vector<DocumentStrategy> strategies = random_strategies(rng);
    const std::vector<int64_t> lengths = log_uniform_lengths(rng, 3 + static_cast<int64_t>(rng() % 4));
    double tokens = 0;
    for (int64_t l : lengths) tokens += static_cast<double>(l);
    const BucketPlanner planner(strategies, {.max_batch_tokens = static_cast<int64_t>(tokens), .packed_rows = {}});
    const BucketPlan plan = planner.plan(lengths);
    const Best best = exhaustive(planner, lengths);
    INFO("trial " << trial);
    CHECK(plan.predicted_s == Approx(best.tabulated).epsilon(1e-8));  // ties within 1e-9 a bucket
    const double exact = exact_step_s(plan, strategies, lengths);
    CHECK(exact >= best.exact * (1 - 1e-12));
    CHECK(exact <= best.exact * (1 + 0.02));
    multi_bucket += plan.buckets.size() > 1;
    for (const PlannedBucket& b : plan.buckets) mixed += b.strategy != plan.buckets[0].strategy;
  }
  CHECK(multi_bucket >= 10);  // the cases exercise bucketing, not one layout for everything
  CHECK(mixed >= 10);
}

TEST_CASE("bucket planner: its tabulated prices are load_time_s within 2%", "[bucket_planner]") {
  std::mt19937_64 rng(7);
  double worst = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const std::vector<DocumentStrategy> strategies = random_strategies(rng);
    const std::vector<int64_t> lengths = random_lengths(rng, 1 + static_cast<int64_t>(rng() % 60));
    DocumentLoad load;
    for (int64_t l : lengths) load.add(l);
    const BucketPlanner planner(strategies, {.max_batch_tokens = static_cast<int64_t>(load.tokens), .packed_rows = {}});
    for (size_t s = 0; s < strategies.size(); ++s) {
      const double exact = load_time_s(strategies[s], load), tabulated = planner.bucket_s(s, load);
      if (exact == kDocumentsDoNotFit) {
        CHECK(tabulated == kDocumentsDoNotFit);
        continue;
      }
      worst = std::max(worst, std::abs(tabulated / exact - 1));
      if (strategies[s].replicas[0].stages.size() == 1) CHECK(tabulated == Approx(exact).epsilon(1e-12));
    }
  }
  CHECK(worst <= 0.02);
}

TEST_CASE("bucket planner: long pipelines past its tables are extrapolated within 1%", "[bucket_planner]") {
  // 3 uneven stages with sends, micro-batches of 256 tokens: 30 to 200 of them, past the
  // tables' 22; each schedule against load_time_s (pipeline_time played out).
  for (ScheduleKind kind : {ScheduleKind::one_f_one_b, ScheduleKind::gpipe}) {
    const std::vector<StageCost> stages = {stage(0.3, 0.2, 1e6, 1e6, 0.05), stage(0.5, 0.1, 1e6, 1e6, 0.02),
                                           stage(0.2, 0.3, 1e6, 1e6, 0)};
    const std::vector<DocumentStrategy> strategies = {strategy("pp", {stages}, {1}, 0, 0, kind, 256)};
    for (int64_t documents : {120, 401, 800}) {
      DocumentLoad load;
      for (int64_t i = 0; i < documents; ++i) load.add(16 + (i * 37) % 113);
      const BucketPlanner planner(strategies, {.max_batch_tokens = static_cast<int64_t>(load.tokens), .packed_rows = {}});
      INFO(pipeline::to_string(kind) << ", " << documents << " documents");
      CHECK(replica_part(strategies[0], 0, load).micro_batches > 22);
      CHECK(planner.bucket_s(0, load) == Approx(load_time_s(strategies[0], load)).epsilon(0.01));
    }
  }
}

TEST_CASE("bucket planner: long documents go where attention is cheap", "[bucket_planner]") {
  // "fast" runs tokens 20% faster, "cheap_attention" runs attention at half the cost; many short
  // documents and two of 2,048 tokens (attention 2/3 of their time there).
  const std::vector<DocumentStrategy> strategies = {
      strategy("fast", {{stage(0.8, 1.0)}}, {1}),
      strategy("cheap_attention", {{stage(1.0, 0.5)}}, {1}, 0, 0.01)};
  std::vector<int64_t> lengths(200, 32);
  lengths.push_back(2048);
  lengths.push_back(2048);
  const BucketPlan plan = BucketPlanner(strategies).plan(lengths);
  REQUIRE(plan.buckets.size() == 2);
  CHECK(plan.buckets[0].max_len == 32);
  CHECK(plan.buckets[0].strategy == "fast");
  CHECK(plan.buckets[1].strategy == "cheap_attention");
  CHECK(plan.buckets[1].documents == 2);
}

TEST_CASE("bucket planner: a memory limit sends long documents elsewhere", "[bucket_planner]") {
  // "small" (twice as fast) holds micro-batches of at most 512 tokens: 4 P + t / 1024 x A with
  // P = A = 1 MB, at most 4.5 MB.
  const std::vector<DocumentStrategy> strategies = {strategy("small", {{stage(0.5, 0.5)}}, {1}, 4.5e6),
                                                    strategy("big", {{stage(1, 1)}}, {1}, 0, 0.01)};
  CHECK(max_fitting_tokens(strategies[0], 0, 2) == 512);
  const std::vector<int64_t> lengths = {100, 300, 512, 513, 900, 2000, 40};
  const BucketPlan plan = BucketPlanner(strategies).plan(lengths);
  REQUIRE(plan.buckets.size() == 2);
  // 300 rather than 512: the 512 fills what "big"'s two rows of 2,048 leave as padding (3,413
  // tokens of 4,096 slots) for free, and "small" then runs one micro-batch of 512 slots, not two.
  CHECK(plan.buckets[0].max_len == 300);
  CHECK(plan.buckets[0].strategy == "small");
  CHECK(plan.buckets[1].strategy == "big");
  CHECK(exact_step_s(plan, strategies, lengths) == Approx(plan.predicted_s));
}

TEST_CASE("bucket planner: a switch that costs more than it saves is not made", "[bucket_planner]") {
  std::vector<int64_t> lengths(100, 64);
  lengths.push_back(1500);
  auto plan_with = [&](double switch_s) {
    return BucketPlanner({strategy("holder", {{stage(1, 1)}}, {1}), strategy("other", {{stage(1.1, 0.5)}}, {1}, 0, switch_s)})
        .plan(lengths);
  };
  // The long document alone: 10.83 s under "holder", 8.05 s under "other" (10% slower per token,
  // half the attention), so worth a switch of 0.5 s, not one of 5 s; the short ones run faster
  // under "holder" (19.92 s against 21.21 s).
  const BucketPlan cheap = plan_with(0.5), dear = plan_with(5);
  REQUIRE(cheap.buckets.size() == 2);
  CHECK(cheap.buckets[1].strategy == "other");
  REQUIRE(dear.buckets.size() == 1);
  CHECK(dear.buckets[0].strategy == "holder");
}

// `s` with every micro-batch paying `forward` (and twice that backward) on each stage.
DocumentStrategy with_fixed(DocumentStrategy s, double forward) {
  for (DocumentReplica& r : s.replicas) r.fixed.assign(r.stages.size(), StageTimes{forward, 2 * forward, 0});
  return s;
}

TEST_CASE("bucket planner: a fixed cost per micro-batch prices many short micro-batches higher", "[bucket_planner]") {
  // One stage, 1 s forward and 2 s backward per 1,024 tokens, no attention, 0.1 s + 0.2 s of
  // that fixed per micro-batch; micro-batches of one row of 2,048 tokens. 20 documents of 100
  // tokens pack rows of 128 (bucket_rows.h): 16 micro-batches of 128 slots (their tokens fill
  // 15.6 rows); 2 documents of 1,000 pack rows of 1,024: 2 micro-batches. By hand, every slot
  // priced (Note [Padding in a micro-batch]): 16 x 0.3 + 2,048 x 2.7 / 1,024 against 2 x 0.3 +
  // 2,048 x 2.7 / 1,024; without the fixed term both are 2,048 x 3 / 1,024.
  const DocumentStrategy s = with_fixed(strategy("one", {{stage(1, 0)}}, {1}), 0.1);
  DocumentLoad many, few;
  for (int i = 0; i < 20; ++i) many.add(100);
  for (int i = 0; i < 2; ++i) few.add(1000);
  const double scaled = 2048 * 2.7 / 1024;
  CHECK(load_time_s(s, many) == Approx(16 * 0.3 + scaled).epsilon(1e-12));
  CHECK(load_time_s(s, few) == Approx(2 * 0.3 + scaled).epsilon(1e-12));
  const BucketPlanner planner({s});
  CHECK(planner.bucket_s(0, many) == Approx(16 * 0.3 + scaled).epsilon(1e-9));
  CHECK(planner.bucket_s(0, few) == Approx(2 * 0.3 + scaled).epsilon(1e-9));
  // A pipeline of two such stages: the tables add the fixed parts' own pipeline, an upper bound
  // on the exact one that is tight here (every stage alike).
  const DocumentStrategy pp = with_fixed(strategy("pp", {{stage(1, 0.2), stage(1, 0.2)}}, {1}), 0.1);
  const BucketPlanner pp_planner({pp});
  for (const DocumentLoad& load : {many, few}) {
    CHECK(pp_planner.bucket_s(0, load) >= load_time_s(pp, load) * (1 - 1e-9));
    CHECK(pp_planner.bucket_s(0, load) == Approx(load_time_s(pp, load)).epsilon(0.02));
  }
  DocumentStrategy too_much = with_fixed(strategy("one", {{stage(1, 0)}}, {1}), 1.5);  // more than its 1 s forward
  CHECK_THROWS_WITH(BucketPlanner({too_much}), Catch::Contains("fixed cost per micro-batch"));
}

TEST_CASE("bucket planner: every slot of a micro-batch is priced, in the rows its documents pack", "[bucket_planner]") {
  // One stage, 1 s forward and 2 s backward per 1,024 token slots, no attention; micro-batches of
  // one row of 64. Three documents of 40 tokens (120) fill 1.9 rows by their tokens, but whole
  // documents take a row each (40 + 40 > 64): by hand 3 micro-batches of 64 slots, 3 x 64 x 3 /
  // 1,024 s; by their tokens 2 of 64 slots; the tokens unpadded 120 x 3 / 1,024.
  const std::vector<DocumentStrategy> strategies = {
      strategy("one", {{stage(1, 0)}}, {1}, 0, 0, ScheduleKind::one_f_one_b, 64)};
  const std::vector<int64_t> lengths = {40, 40, 40};
  int64_t asked = 0;
  const BucketPlannerOptions counted{.max_boundaries = 64, .ratio_points = 65, .max_batch_tokens = 0,
                                     .packed_rows = [&](std::span<const int64_t> pieces, int64_t row_length) {
                                       CHECK(row_length == 64);
                                       CHECK(pieces.size() == 3);
                                       ++asked;
                                       return 3.0;
                                     }};
  const BucketPlan packed = BucketPlanner(strategies, counted).plan(lengths);
  REQUIRE(packed.buckets.size() == 1);
  CHECK(asked > 0);
  CHECK(packed.predicted_s == Approx(3 * 64 * 3.0 / 1024).epsilon(1e-9));
  const BucketPlan fluid = BucketPlanner(strategies).plan(lengths);
  CHECK(fluid.predicted_s == Approx(2 * 64 * 3.0 / 1024).epsilon(1e-9));
  // The same priced directly: 40, 30, 40, 30 in 4 rows (next-fit) of 64 slots each.
  DocumentLoad load;
  for (int64_t l : {40, 30, 40, 30}) load.add(l);
  load.rows = 4;
  CHECK(replica_part(strategies[0], 0, load).micro_batches == 4);
  CHECK(replica_part(strategies[0], 0, load).tokens == 64);
  CHECK(load_time_s(strategies[0], load) == Approx(4 * 64 * 3.0 / 1024).epsilon(1e-12));
}

TEST_CASE("bucket planner: a dominant fixed cost per micro-batch keeps short documents off its strategy",
          "[bucket_planner]") {
  // 30 documents of 60 tokens and one of 1,000. "long" holds every document (micro-batches of
  // 2,048 tokens) at 1 s + 2 s per 1,024 tokens; "short" computes at half that per token but
  // holds micro-batches of 512 tokens only, and with `fixed` s + 2 `fixed` s of its time per
  // micro-batch. The short documents on "short" pack rows of 64: 29 micro-batches of 64 slots
  // (their 1,800 tokens fill 28.1 rows), priced 29 x 3 fixed + 1,856 x (1.5 - 3 fixed) / 1,024;
  // the long one alone on "long" 1,024 x 3 / 1,024; all on "long" in rows of 1,024 (no fixed
  // cost) 3 rows, 3,072 x 3 / 1,024 = 9 s, more than the short ones on "long" in their own rows of 64
  // (1,856 x 3 / 1,024 = 5.44 s) beside the long one (3 s).
  std::vector<int64_t> lengths(30, 60);
  lengths.push_back(1000);
  auto plan_with = [&](double fixed) {
    return BucketPlanner({strategy("long", {{stage(1, 0)}}, {1}),
                          with_fixed(strategy("short", {{stage(0.5, 0)}}, {1}, 0, 0, ScheduleKind::one_f_one_b, 512), fixed)})
        .plan(lengths);
  };
  const BucketPlan dominant = plan_with(0.1);  // 29 x 0.3 + 1,856 x 1.2 / 1,024 + 3 = 13.9 s > 8.44 s
  REQUIRE(dominant.buckets.size() == 2);
  CHECK(dominant.buckets[0].strategy == "long");
  CHECK(dominant.buckets[1].strategy == "long");
  CHECK(dominant.predicted_s == Approx(1856 * 3.0 / 1024 + 3).epsilon(1e-9));
  const BucketPlan small = plan_with(0.001);  // 29 x 0.003 + 1,856 x 1.497 / 1,024 + 3 = 5.80 s
  REQUIRE(small.buckets.size() == 2);
  CHECK(small.buckets[0].max_len == 60);
  CHECK(small.buckets[0].strategy == "short");
  CHECK(small.buckets[1].strategy == "long");
  CHECK(small.predicted_s == Approx(29 * 0.003 + 1856 * 1.497 / 1024 + 1024 * 3.0 / 1024).epsilon(1e-9));
}

TEST_CASE("bucket planner: deterministic, any order, and clear errors", "[bucket_planner]") {
  std::mt19937_64 rng(3);
  const std::vector<DocumentStrategy> strategies = random_strategies(rng);
  std::vector<int64_t> lengths = random_lengths(rng, 300);
  const BucketPlanner planner(strategies);
  const BucketPlan a = planner.plan(lengths);
  std::shuffle(lengths.begin(), lengths.end(), rng);
  const BucketPlan b = planner.plan(lengths);
  REQUIRE(a.buckets.size() == b.buckets.size());
  for (size_t i = 0; i < a.buckets.size(); ++i) {
    CHECK(a.buckets[i].max_len == b.buckets[i].max_len);
    CHECK(a.buckets[i].strategy == b.buckets[i].strategy);
  }
  CHECK(a.predicted_s == b.predicted_s);
  const std::vector<int64_t> too_long = {10, 4096};
  CHECK_THROWS_WITH(planner.plan(too_long), Catch::Contains("4096 tokens"));
  CHECK_THROWS_AS(planner.plan(std::vector<int64_t>{}), UsageError);
  CHECK_THROWS_AS(BucketPlanner({strategies[0], strategies[0]}), UsageError);
}

TEST_CASE("bucket planner: 1,000 documents plan within 10 ms (checked at 200)", "[bucket_planner]") {
  // Four strategies of 8 devices: dp 8, tp 8 (one device's times / 8 + collectives), pp 2 x dp 4
  // and pp 4 x dp 2; a long-tailed batch of 1,000 documents of 32-2,048 tokens.
  std::mt19937_64 rng(11);
  std::vector<int64_t> lengths = random_lengths(rng, 1000);
  double tokens = 0;
  for (int64_t l : lengths) tokens += static_cast<double>(l);
  auto replicas = [](int64_t count, int64_t stages, double scale) {
    std::vector<std::vector<StageCost>> out(static_cast<size_t>(count));
    for (auto& r : out)
      for (int64_t s = 0; s < stages; ++s) r.push_back(stage(scale * 0.5, scale * 0.5, 1e6 / stages, 1e6, 0.001));
    return out;
  };
  const std::vector<DocumentStrategy> strategies = {
      strategy("dp8", replicas(8, 1, 1), std::vector<double>(8, 1), 4.6e6),
      strategy("tp8", replicas(1, 1, 0.15), {1}, 0, 0.05),
      strategy("pp2dp4", replicas(4, 2, 0.5), std::vector<double>(4, 1), 0, 0.03),
      strategy("pp4dp2", replicas(2, 4, 0.25), {1, 1}, 0, 0.03, ScheduleKind::gpipe)};
  const auto build_start = std::chrono::steady_clock::now();
  const BucketPlanner planner(strategies, {.max_batch_tokens = static_cast<int64_t>(tokens), .packed_rows = {}});
  const double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - build_start).count();
  double fastest = 1e9;
  BucketPlan plan;
  for (int run = 0; run < 5; ++run) {
    const auto start = std::chrono::steady_clock::now();
    plan = planner.plan(lengths);
    fastest = std::min(fastest, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::printf("bucket planner: 1,000 documents planned in %.2f ms (best of 5; tables built once in %.1f ms), %zu buckets:",
              1e3 * fastest, 1e3 * build_s, plan.buckets.size());
  for (const PlannedBucket& b : plan.buckets) {
    std::printf(" %s<=%s", b.strategy.c_str(), b.max_len ? std::to_string(*b.max_len).c_str() : "any");
  }
  std::printf("\n");
  CHECK(fastest < 0.2);  // the goal is 10 ms on a quiet core; generous for a busy machine
  CHECK(exact_step_s(plan, strategies, lengths) == Approx(plan.predicted_s).epsilon(0.02));
  // Every distinct length as a candidate end (the optimum over all plans) gains little over 64.
  const auto all_start = std::chrono::steady_clock::now();
  const BucketPlan best = BucketPlanner(strategies, {.max_boundaries = 4096, .max_batch_tokens = static_cast<int64_t>(tokens), .packed_rows = {}})
                              .plan(lengths);
  std::printf("bucket planner: every distinct length as an end: %.4f s against %.4f s with 64 (%.2f s to plan)\n",
              best.predicted_s, plan.predicted_s,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - all_start).count());
  CHECK(best.predicted_s <= plan.predicted_s * (1 + 1e-9));
  CHECK(plan.predicted_s <= best.predicted_s * 1.01);
}
