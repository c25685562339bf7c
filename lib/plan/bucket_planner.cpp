// Bucket boundaries and a strategy per bucket. See Note [Bucket planner].
#include "lib/plan/bucket_planner.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "lib/pipeline/bucket_rows.h"
#include "lib/util/error.h"

namespace hetu::plan {

// Note [Bucket planner]
// Buckets cut the batch's lengths at max_len values, so in sorted order each bucket is a run
// of consecutive lengths, and a plan is a cut of the sorted distinct lengths into runs with a
// strategy per run. Its predicted step is Σ over runs of bucket_s(run's strategy, run's
// documents), each bucket_s including that strategy's switch_s: additive over runs, so a DP
// over run ends finds the best plan: best[j] = min over i < j and strategies s of best[i] +
// bucket_s(s, the lengths between ends i and j), with the runs' count, Σ L and Σ L² from prefix
// sums (exact: integers below 2^53), O(C² x S) prices for C candidate ends and S strategies;
// with options.packed_rows each run's rows are counted from its lengths in stream order as the
// batcher packs them (O(C² x n) for n lengths; rounds of a global batch aside, where next-fit
// starts over).
// The candidate ends are every distinct length when there are at most max_boundaries of them
// (then the plan is optimal over all plans); else the lengths at max_boundaries evenly spaced
// ranks, each strategy's longest length that one of its micro-batches holds (where its memory
// cuts), and the longest length. Ties (within kTie, so that rounding does not split a bucket
// for nothing) keep the first found: the earliest start i of the last run (fewer buckets),
// then the strategies in the order given.
// A price must be O(replicas): a replica's pipeline of m alike micro-batches of t tokens whose
// Σ L² is q takes t x G_m(q / t), since every stage time is linear in (t, q) and the critical
// path (pipeline_time) scales with all its durations; t counts a micro-batch's slots, padding
// included, so q / t is each replica's own (Note [Padding in a micro-batch]); with fixed parts per micro-batch (Note [Fixed cost per micro-batch]) the
// price adds F_m, the pipeline of m micro-batches of the stages' fixed parts alone: exact for
// one stage (both are sums), an upper bound otherwise (a makespan, a max over paths of sums,
// is subadditive), tight where one stage is the bottleneck of both. G_m is tabulated once per strategy and replica, for m up to what
// max_batch_tokens needs, at ratio_points ratios spaced evenly in log between 1 and the
// strategy's widest micro-batch (the ratio of any run lies there), and interpolated linearly
// between them: exact at the grid and wherever one stage stays the bottleneck (G_m then is
// linear), otherwise within a small fraction (G_m is a max of linear functions, convex);
// test_bucket_planner checks it against load_time_s. Memory is tabulated the same way
// (max_fitting_tokens per m, exact; past the table, 1F1B's is the table's last, since neither
// its micro-batches in flight nor the gradients grow). Equal replicas (a data-parallel strategy's) are priced
// once. Tables stop at 6 x stages + 4 micro-batches: past that,
// G_m is extrapolated linearly by the last window of 2 x stages (the steady state repeats, as
// the layout search's Note [Layout search]; exact for one stage), memory priced exactly. A
// batch larger than max_batch_tokens said, with fewer micro-batches than that, is priced
// exactly (pipeline_time), slower but the same plan.
namespace {

constexpr int64_t kDefaultTabulatedMicroBatches = 64;
// Pipelines are tabulated up to this many micro-batches, then extrapolated by the last window
// of 2 x stages (the steady state repeats; as the layout search does, Note [Layout search]).
int64_t tabulated_up_to(int64_t stages) { return 6 * stages + 4; }
constexpr double kTie = 1e-9;  // plans within this share of each other are ties (rounding)

}  // namespace

BucketPlanner::BucketPlanner(std::vector<DocumentStrategy> strategies, BucketPlannerOptions options)
    : strategies_(std::move(strategies)), options_(options) {
  HT_USAGE_CHECK(!strategies_.empty(), "bucket planner: no strategies");
  HT_USAGE_CHECK(options_.max_boundaries >= 1 && options_.ratio_points >= 2,
                 "bucket planner: max_boundaries must be >= 1 and ratio_points >= 2");
  std::set<std::string> names;
  for (const DocumentStrategy& s : strategies_) {
    HT_USAGE_CHECK(names.insert(s.name).second, "bucket planner: two strategies named '{}'", s.name);
    HT_USAGE_CHECK(!s.replicas.empty(), "bucket planner: strategy '{}' has no replicas", s.name);
    HT_USAGE_CHECK(s.priced_seq_len > 0, "bucket planner: strategy '{}' has no priced sequence length", s.name);
    double shares = 0;
    int64_t widest = 1;
    for (const DocumentReplica& r : s.replicas) {
      HT_USAGE_CHECK(!r.stages.empty() && r.memory_bytes.size() == r.stages.size() && r.share > 0 &&
                         r.priced_tokens > 0 && r.micro_batch_tokens >= 1 && s.row_tokens >= 1 &&
                         r.micro_batch_tokens % s.row_tokens == 0,
                     "bucket planner: strategy '{}' has a replica without stages, memory, share or micro-batch of "
                     "rows", s.name);
      HT_USAGE_CHECK(r.fixed.empty() || r.fixed.size() == r.stages.size(),
                     "bucket planner: strategy '{}' has a fixed cost for {} of {} stages", s.name, r.fixed.size(),
                     r.stages.size());
      for (size_t k = 0; k < r.fixed.size(); ++k) {
        const StageTimes& f = r.fixed[k];
        const StageCost& c = r.stages[k];
        HT_USAGE_CHECK(f.forward_s >= 0 && f.backward_s >= 0 && f.send_s >= 0 &&
                           f.forward_s <= c.times.forward_s - c.attention_forward_s &&
                           f.backward_s <= c.times.backward_s - c.attention_backward_s && f.send_s <= c.times.send_s,
                       "bucket planner: strategy '{}' stage {}'s fixed cost per micro-batch is negative or more than its "
                       "per-token part", s.name, k);
      }
      shares += r.share;
      widest = std::max(widest, r.micro_batch_tokens);
    }
    const auto points = static_cast<size_t>(options_.ratio_points);
    std::vector<double> ratios(points);
    const double top = std::log(std::max(2.0, static_cast<double>(widest)));
    for (size_t k = 0; k < points; ++k) ratios[k] = std::exp(top * static_cast<double>(k) / static_cast<double>(points - 1));
    std::vector<ReplicaTable> tables;
    std::vector<size_t> alike;
    for (size_t r = 0; r < s.replicas.size(); ++r) {
      alike.push_back(static_cast<size_t>(std::find(s.replicas.begin(), s.replicas.end(), s.replicas[r]) - s.replicas.begin()));
      if (alike.back() != r) {  // an equal replica's share of any bucket runs as long: priced once
        tables.push_back(tables[alike.back()]);
        continue;
      }
      ReplicaTable t;
      // Its micro-batches of the batch at the shortest rows (one token each: micro_batch_tokens
      // / row_tokens tokens a micro-batch, bucket_rows.h).
      const double rows_per_micro_batch = static_cast<double>(s.replicas[r].micro_batch_tokens / s.row_tokens);
      t.micro_batches = options_.max_batch_tokens > 0
                            ? static_cast<int64_t>(std::ceil(s.replicas[r].share / shares *
                                                             static_cast<double>(options_.max_batch_tokens) /
                                                             rows_per_micro_batch))
                            : kDefaultTabulatedMicroBatches;
      t.micro_batches = std::max<int64_t>(1, t.micro_batches);
      t.extrapolate_after = tabulated_up_to(static_cast<int64_t>(s.replicas[r].stages.size()));
      t.micro_batches = std::min(t.micro_batches, t.extrapolate_after);
      const size_t stages = s.replicas[r].stages.size();
      std::vector<StageTimes> fixed;
      for (size_t k = 0; k < stages; ++k) fixed.push_back(fixed_times(s.replicas[r], k));
      for (int64_t m = 1; m <= t.micro_batches; ++m) {
        t.fitting.push_back(max_fitting_tokens(s, r, m));
        for (double ratio : ratios) {
          std::vector<StageTimes> times;
          for (size_t k = 0; k < stages; ++k) times.push_back(scaled_times(s, r, k, 1.0, ratio));
          t.makespan.push_back(pipeline_time(s.replicas[r].schedule, m, times).makespan_s);
        }
        t.fixed_makespan.push_back(s.replicas[r].fixed.empty() ? 0.0
                                                                : pipeline_time(s.replicas[r].schedule, m, fixed).makespan_s);
      }
      tables.push_back(std::move(t));
    }
    ratios_.push_back(std::move(ratios));
    tables_.push_back(std::move(tables));
    alike_.push_back(std::move(alike));
  }
}

double BucketPlanner::replica_s(size_t s, size_t r, const ReplicaPart& part, double ratio) const {
  const DocumentStrategy& strategy = strategies_[s];
  const ReplicaTable& t = tables_[s][r];
  if (part.micro_batches > t.micro_batches && t.micro_batches < t.extrapolate_after) {  // past a batch's tables
    std::vector<StageTimes> times;
    for (size_t stage = 0; stage < strategy.replicas[r].stages.size(); ++stage) {
      times.push_back(micro_batch_times(strategy, r, stage, part.tokens, part.square_tokens));
    }
    return pipeline_time(strategy.replicas[r].schedule, part.micro_batches, times).makespan_s;
  }
  const std::vector<double>& grid = ratios_[s];
  const auto last = static_cast<int64_t>(grid.size()) - 1;
  const double position = std::log(std::max(1.0, ratio)) / std::log(grid.back()) * static_cast<double>(last);
  const int64_t k = std::clamp<int64_t>(static_cast<int64_t>(position), 0, last - 1);
  // Below the grid (padding makes Σ L² / slots < 1): the first segment's line, down to ratio 0.
  const double lowest = k == 0 ? -grid[0] / (grid[1] - grid[0]) : 0.0;
  const double w = std::clamp((ratio - grid[static_cast<size_t>(k)]) /
                                  (grid[static_cast<size_t>(k + 1)] - grid[static_cast<size_t>(k)]),
                              lowest, 1.0);
  auto at = [&](int64_t m) {  // t x G_m at the ratio plus F_m, m <= the tables
    const size_t row = static_cast<size_t>((m - 1) * (last + 1) + k);
    return part.tokens * ((1 - w) * t.makespan[row] + w * t.makespan[row + 1]) +
           t.fixed_makespan[static_cast<size_t>(m - 1)];
  };
  if (part.micro_batches <= t.micro_batches) return at(part.micro_batches);
  const int64_t window = 2 * static_cast<int64_t>(strategy.replicas[r].stages.size());
  const double per_window = at(t.micro_batches) - at(t.micro_batches - window);
  return at(t.micro_batches) +
         per_window * static_cast<double>(part.micro_batches - t.micro_batches) / static_cast<double>(window);
}

double BucketPlanner::bucket_s(size_t s, const DocumentLoad& load) const {
  const DocumentStrategy& strategy = strategies_.at(s);
  if (load.documents == 0) return 0;
  if (load.longest > strategy.micro_batch_tokens()) return kDocumentsDoNotFit;
  double slowest = 0;
  for (size_t r = 0; r < strategy.replicas.size(); ++r) {
    if (alike_[s][r] != r) continue;
    const ReplicaTable& t = tables_[s][r];
    const ReplicaPart part = replica_part(strategy, r, load, [&](int64_t m) {
      if (m <= t.micro_batches) return t.fitting[static_cast<size_t>(m - 1)];
      // Under 1F1B neither the micro-batches in flight (at most the stages) nor the gradients
      // held grow past the table's end (short rows run many micro-batches).
      const auto stages = static_cast<int64_t>(strategy.replicas[r].stages.size());
      if (strategy.replicas[r].schedule == pipeline::ScheduleKind::one_f_one_b &&
          t.micro_batches >= std::max<int64_t>(2, stages)) {
        return t.fitting.back();
      }
      return max_fitting_tokens(strategy, r, m);
    });
    if (!part.fits) return kDocumentsDoNotFit;
    if (part.micro_batches == 0) continue;
    slowest = std::max(slowest, replica_s(s, r, part, part.square_tokens / part.tokens));
  }
  return slowest + strategy.switch_s;
}

BucketPlan BucketPlanner::plan(std::span<const int64_t> lengths) const {
  HT_USAGE_CHECK(!lengths.empty(), "bucket planner: no documents");
  std::vector<int64_t> sorted(lengths.begin(), lengths.end());
  std::sort(sorted.begin(), sorted.end());
  HT_USAGE_CHECK(sorted.front() >= 1, "bucket planner: a document of {} tokens", sorted.front());
  // The distinct lengths, and prefix sums over them: [g] = the documents shorter than value[g].
  std::vector<int64_t> value;
  std::vector<double> count{0}, tokens{0}, squares{0};
  for (int64_t l : sorted) {
    if (value.empty() || value.back() != l) {
      value.push_back(l);
      count.push_back(count.back());
      tokens.push_back(tokens.back());
      squares.push_back(squares.back());
    }
    const auto x = static_cast<double>(l);
    count.back() += 1;
    tokens.back() += x;
    squares.back() += x * x;
  }
  const auto distinct = static_cast<int64_t>(value.size());
  // Candidate ends, as counts of distinct lengths included (1..distinct).
  std::vector<int64_t> ends;
  if (distinct <= options_.max_boundaries) {
    for (int64_t g = 1; g <= distinct; ++g) ends.push_back(g);
  } else {
    std::set<int64_t> chosen{distinct};
    const auto n = static_cast<int64_t>(sorted.size());
    auto end_of_length = [&](int64_t l) {  // distinct lengths <= l
      return static_cast<int64_t>(std::upper_bound(value.begin(), value.end(), l) - value.begin());
    };
    for (int64_t i = 1; i < options_.max_boundaries; ++i) chosen.insert(end_of_length(sorted[static_cast<size_t>(i * n / options_.max_boundaries)]));
    for (size_t s = 0; s < strategies_.size(); ++s) {
      int64_t holds = strategies_[s].micro_batch_tokens();
      for (const ReplicaTable& t : tables_[s]) holds = std::min(holds, t.fitting[0]);
      if (const int64_t g = end_of_length(holds); g >= 1) chosen.insert(g);
    }
    ends.assign(chosen.begin(), chosen.end());
  }
  ends.insert(ends.begin(), 0);
  const size_t C = ends.size();
  std::vector<double> best(C, kDocumentsDoNotFit);
  std::vector<size_t> from(C, 0), via(C, 0);
  best[0] = 0;
  std::vector<int64_t> pieces;  // a bucket's lengths in stream order, for packed_rows
  // The run of lengths between ends i and j, its rows at row_tokens counted when packed_rows says how.
  auto load_between = [&](size_t i, size_t j, int64_t row_tokens) {
    const auto a = static_cast<size_t>(ends[i]), b = static_cast<size_t>(ends[j]);
    DocumentLoad load;
    load.documents = static_cast<int64_t>(count[b] - count[a]);
    load.tokens = tokens[b] - tokens[a];
    load.square_tokens = squares[b] - squares[a];
    load.longest = value[b - 1];
    if (options_.packed_rows && load.longest <= row_tokens) {
      pieces.clear();
      for (int64_t l : lengths)
        if (l >= value[a] && l <= load.longest) pieces.push_back(l);
      load.rows = options_.packed_rows(pieces, pipeline::bucket_row_length(row_tokens, load.longest));
    }
    return load;
  };
  for (size_t j = 1; j < C; ++j) {
    for (size_t i = 0; i < j; ++i) {
      if (best[i] == kDocumentsDoNotFit) continue;
      DocumentLoad load;
      int64_t load_rows_at = 0;  // the row_tokens `load` was counted at (strategies mostly share one)
      for (size_t s = 0; s < strategies_.size(); ++s) {
        if (strategies_[s].row_tokens != load_rows_at) {
          load = load_between(i, j, strategies_[s].row_tokens);
          load_rows_at = strategies_[s].row_tokens;
        }
        const double t = best[i] + bucket_s(s, load);
        if (t < best[j] * (1 - kTie)) {
          best[j] = t;
          from[j] = i;
          via[j] = s;
        }
      }
    }
  }
  HT_USAGE_CHECK(best[C - 1] < kDocumentsDoNotFit,
                 "bucket planner: no strategy holds the batch's documents of up to {} tokens (none of {} fits its "
                 "micro-batch and memory)",
                 sorted.back(), strategies_.size());
  BucketPlan out;
  out.predicted_s = best[C - 1];
  for (size_t j = C - 1; j > 0; j = from[j]) {
    const DocumentLoad load = load_between(from[j], j, strategies_[via[j]].row_tokens);
    PlannedBucket b;
    b.max_len = value[static_cast<size_t>(ends[j] - 1)];
    b.strategy = strategies_[via[j]].name;
    b.documents = load.documents;
    b.tokens = load.tokens;
    b.predicted_s = bucket_s(via[j], load);
    out.buckets.push_back(std::move(b));
  }
  std::reverse(out.buckets.begin(), out.buckets.end());
  out.buckets.back().max_len.reset();
  return out;
}

}  // namespace hetu::plan
