// Straggler detection and the re-plan decision. See straggler.h.
#include "lib/runtime/straggler.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <functional>

#include "lib/util/error.h"

namespace hetu::runtime {
namespace {

// Note [Straggler decisions]:
// - What is compared. Rank r's ratio in a step is its measured compute over the cost model's
//   prediction for it; the cluster's pace is the lower median of the ratios of the ranks that
//   compute. A rank is out of line in that step when its ratio over the pace is >= threshold
//   (slower than predicted) or <= 1/threshold (faster: a device that recovered). Dividing by
//   the pace keeps a profile measured under other load, or a slowdown of every device at once
//   (which no layout can help), from looking like a straggler; the lower median (the smaller
//   middle value) lets one slow rank of two still stand out.
// - When. Only `window` consecutive out-of-line steps of one rank, in one direction, trigger a
//   re-plan: jitter below the threshold, or a single slow step (a checkpoint, a busy core),
//   never does. A step's compute is its forward, backward and optimizer step (the logging,
//   evaluation and checkpoints after it are left out: rank 0 does more of them); the run's
//   first step and the first after a switch (warming up) are not samples.
// - The re-plan. Each out-of-line rank's slowdown is multiplied by its window's median
//   factor (the others keep theirs), the planner prices the current layout and searches the
//   best one at those slowdowns, and the run switches when the best is another layout
//   predicted at least min_gain faster. Hysteresis: the slowdowns are kept either way and the
//   expectations follow them, so the same speeds do not trigger again; a device that
//   recovers is out of line the other way, and gets its work back only through a re-plan
//   that predicts the gain.
// - What a rank's prediction is. A rank measures its own compute (CPU time between its
//   messages, times its own slowdown), never the waits inside collectives, so its prediction
//   is its stage's compute priced as if every member of its tp group were its own device
//   (lib/plan/straggler_plan.cpp expected_compute); the step time the planner compares layouts by
//   prices a tp group at its slowest member's pace (lib/plan stage_cost). A tp-k stage takes
//   the profile's times measured at tp k where it has them (the collectives and what tp cannot
//   split included), else splits the tp-1 times over k and adds the collectives.
//   The defect this fixed: the search priced a tp group over two nodes at its first device's
//   type, so a normal device paired with the straggler hid the straggler's slowdown, and it
//   used the tp-1 times unsplit for any tp; on the tiny rehearsal model a tp-2 rank computes
//   about 2.3x a tp-1 rank's time, so after switching to "a:2; b:0" the pair measured 2.8x
//   and 7.9x (2.8 x its slowdown 3) their predictions and the run re-planned again.
//   Still inexact: compute a step does once besides the micro-batches and the optimizer
//   step (gradient norm, sync bookkeeping) is not priced, and a profile's tp-2 entry is one
//   short measurement (its ratio to tp 1 moved between 1.65 and 2.3 across profiles on a
//   loaded machine): after a switch into such a pair its ranks measured 1.0-2.4x their
//   predictions, against 2.8x and 7.9x before (tests/e2e/straggler.sh, the forced run).
// - Every rank the same. The measured times are summed over all ranks (each rank fills its
//   own slot), so every rank holds identical numbers, and everything after is a
//   deterministic function of them and of inputs every rank shares (the profile, the
//   layout); a checksum of each decision is compared across ranks, and a difference is an error.

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double lower_median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

std::vector<double> to_list(const std::deque<double>& d) { return {d.begin(), d.end()}; }

std::string slowdowns_text(const std::vector<double>& values) {
  std::string out = "[";
  for (size_t r = 0; r < values.size(); ++r) out += fmt::format("{}{:.4g}", r == 0 ? "" : ", ", values[r]);
  return out + "]";
}

}  // namespace

StragglerDetector::StragglerDetector(StragglerOptions options) : options_(options) {
  HT_CHECK(options_.threshold > 1 && options_.window >= 1, "straggler: threshold must be > 1 and window >= 1");
}

void StragglerDetector::reset() {
  for (auto* lists : {&ratios_, &measured_, &expected_})
    for (std::deque<double>& d : *lists) d.clear();
}

std::optional<StragglerFinding> StragglerDetector::observe(const std::vector<double>& measured,
                                                           const std::vector<double>& expected) {
  const size_t n = measured.size();
  HT_CHECK(expected.size() == n, "straggler: {} measured times for {} expectations", n, expected.size());
  if (ratios_.size() != n) ratios_.assign(n, {}), measured_.assign(n, {}), expected_.assign(n, {});
  std::vector<double> ratios;
  for (size_t r = 0; r < n; ++r)
    if (expected[r] > 0) ratios.push_back(measured[r] / expected[r]);
  if (ratios.empty()) return std::nullopt;
  const double pace = lower_median(ratios);
  if (!(pace > 0)) return std::nullopt;
  const auto window = static_cast<size_t>(options_.window);
  StragglerFinding found;
  found.factor.assign(n, 1.0);
  found.measured_s.assign(n, 0.0);
  found.expected_s.assign(n, 0.0);
  for (size_t r = 0; r < n; ++r) {
    if (!(expected[r] > 0)) {  // idle under this layout
      ratios_[r].clear(), measured_[r].clear(), expected_[r].clear();
      continue;
    }
    auto push = [window](std::deque<double>& d, double v) {
      d.push_back(v);
      if (d.size() > window) d.pop_front();
    };
    push(ratios_[r], measured[r] / expected[r] / pace);
    push(measured_[r], measured[r]);
    push(expected_[r], expected[r] * pace);
    if (ratios_[r].size() < window) continue;
    const std::deque<double>& q = ratios_[r];
    const bool slow = std::all_of(q.begin(), q.end(), [&](double v) { return v >= options_.threshold; });
    const bool fast = std::all_of(q.begin(), q.end(), [&](double v) { return v * options_.threshold <= 1; });
    if (!slow && !fast) continue;
    found.ranks.push_back(static_cast<int64_t>(r));
    found.factor[r] = median(to_list(q));
    found.measured_s[r] = median(to_list(measured_[r]));
    found.expected_s[r] = median(to_list(expected_[r]));
  }
  if (found.ranks.empty()) return std::nullopt;
  return found;
}

double predicted_gain(const StragglerPlanner::Plan& plan) {
  return plan.planned_step_s > 0 ? plan.current_step_s / plan.planned_step_s - 1 : 0.0;
}

StragglerWatch::StragglerWatch(StragglerOptions options, Communicator* comm, std::function<double()> compute_clock,
                               std::unique_ptr<StragglerPlanner> planner)
    : options_(options),
      comm_(comm),
      compute_clock_(std::move(compute_clock)),
      planner_(std::move(planner)),
      detector_(options) {
  HT_CHECK(compute_clock_ && planner_ != nullptr, "straggler: a watch needs a compute clock and a planner");
  slowdown_.assign(static_cast<size_t>(comm_ != nullptr ? comm_->world_size() : 1), 1.0);
}

std::function<StrategyRun()> StragglerWatch::after_step(int64_t step, bool sample) {
  if (!sample) return {};
  const double mine = step_compute_s_;
  const int64_t world = static_cast<int64_t>(slowdown_.size());
  std::vector<double> measured(slowdown_.size(), 0.0);
  measured[static_cast<size_t>(comm_ != nullptr ? comm_->rank() : 0)] = mine;
  if (comm_ != nullptr && world > 1) {
    Tensor buffer = tensor_from(measured, {world});
    comm_->all_reduce(buffer, comm_->world());
    measured = to_vector(buffer);
  }
  if (expected_.empty()) expected_ = planner_->expected_compute(slowdown_);
  spdlog::debug("[straggler] step {}: compute per rank {} s, expected {} s", step, slowdowns_text(measured),
                slowdowns_text(expected_));
  const std::optional<StragglerFinding> found = detector_.observe(measured, expected_);
  if (!found) return {};

  std::vector<double> next = slowdown_;
  for (int64_t r : found->ranks) next[static_cast<size_t>(r)] *= found->factor[static_cast<size_t>(r)];
  StragglerPlanner::Plan plan = planner_->replan(next);
  const double gain = predicted_gain(plan);
  const bool take = plan.changes_layout && gain >= options_.min_gain;
  ++replans_;
  std::string who;
  for (int64_t r : found->ranks) {
    const auto i = static_cast<size_t>(r);
    who += fmt::format("{}rank {} computes {:.4f} s per step against {:.4f} s expected ({:.2f}x)", who.empty() ? "" : "; ",
                       r, found->measured_s[i], found->expected_s[i], found->factor[i]);
  }
  const std::string verdict = take ? "switching at this step boundary"
                              : plan.changes_layout ? fmt::format("staying (below straggler.min_gain = {:g})", options_.min_gain)
                                                    : "staying (it is the current layout)";
  spdlog::info("[straggler] after step {}: {} for {} steps; re-plan {} with slowdowns {}: {}, predicted step {:.4f} s "
               "against {:.4f} s now (gain {:+.1f}%): {}", step, who, options_.window, replans_, slowdowns_text(next),
               plan.summary, plan.planned_step_s, plan.current_step_s, 100 * gain, verdict);
  if (comm_ != nullptr && world > 1) {  // every rank must have decided the same
    const auto h = static_cast<double>(std::hash<std::string>{}(fmt::format("{} {} {}", take, plan.summary,
                                                                            slowdowns_text(next))) % 1048576);
    Tensor check = tensor_from(std::vector<double>{h, h * h}, {2});
    comm_->all_reduce(check, comm_->world());
    const std::vector<double> sums = to_vector(check);
    HT_CHECK(sums[0] == h * static_cast<double>(world) && sums[1] == h * h * static_cast<double>(world),
             "straggler: the ranks took different decisions after step {} (a bug: the inputs must be identical)", step);
  }
  slowdown_ = std::move(next);
  detector_.reset();
  expected_.clear();
  if (!take) return {};
  planner_->adopt(plan);
  return plan.enter;
}

}  // namespace hetu::runtime
