// What `hetu profile` measures on one rank: one micro-batch of a model part that holds the
// embedding, every layer and the LM head (at tp > 1, this rank's shard of them), piece by
// piece, forward and backward of each piece timed on its own (the pieces are cut apart by
// detaching the hidden state between them, so each backward runs alone), the bytes each
// layer keeps for its backward, and one AdamW step over the part's parameters.
//
// Note [Profile windows]: a burst of machine noise must not move the profile. The measurement
// is split into windows; one window is, at every micro-batch size asked for, a settling pass
// (untimed) and a timed pass over every piece, then one AdamW step, so a window is a short
// stretch of time in which every piece is timed once. After `warmup` windows (first touches,
// allocator growth; discarded) come `measured` windows. Per micro-batch size, the windows are
// ranked by their whole pass (every piece, forward and backward); the third with the shortest
// and the third with the longest are dropped, and each piece is its mean over the middle
// windows (the AdamW step likewise over its own times). A burst that slows up to three of 11
// windows is dropped with them, where a mean of all windows would move by the burst's size /
// windows. Not each piece's own median: under steady contention (more runnable threads than
// cores) most short pieces run untouched and a few lose a whole time slice, so each piece's
// median misses the slices that a training step, a sum of many pieces, always pays (and an
// emulated device pays F times); whole windows keep them. The windows follow one another with
// no gap, so the budget is 2 x (warmup + measured) passes at each micro-batch size and warmup +
// measured AdamW steps: 24 passes and 12 steps by default (profile_cluster's rounds add 2
// warm-up windows). What no estimator here removes is a change of the machine's load that
// outlasts the profile. `spread` records how much the windows disagreed (see PieceTimes), so a
// profile taken on a busy machine says so.
//
// Interleaving (profile_cluster): every tp degree's windows are taken in 3 rounds, the
// degrees in turn in each round, its part built again and warmed up again each round (one
// part in memory at a time, as before): a change of the machine's load during the profile
// then reaches every degree's entry alike, where one degree after another put all of it
// into one degree. The entries are compared with one another: a tp group over unlike nodes
// borrows a tp-2 entry scaled by the ratio of two types' tp-1 entries (lib/plan/layout_cost.cpp,
// profile_for). The cost: a warm-up window per degree per round, 3 instead of 1.
//
// Settling passes: each timed pass follows an untimed pass of its own size, as every
// micro-batch of a training step but its first follows one of its own size. Without it, the
// first size's pass followed the AdamW step and each other size's a pass of another size.
// Measured on the accuracy benchmark's tp2-aa job (HETU_WAIT_TRACE,
// scripts/bench/first_pass_trace.py: the paired ratios' medians, 2 profiles x 2 ranks): a
// pass right after the AdamW step over the next pass of its size, 1.03-1.05 at tp 2 and
// 1.01-1.03 at tp 1 in a quiet stretch (wall = CPU time), 1.00-1.03 in CPU time at load
// 11; after another size's pass 0.98-1.03. Training's first micro-batch of a step (after the
// AdamW step) over the step's others: 0.96-0.99 wall, 0.98-1.01 CPU time (tp 2, micro-batch
// 4), 0.97-0.98 CPU time (tp 1, micro-batch 2): not slower (it writes its gradients fresh,
// see held gradients, which may offset what the optimizer step costs it), so no cost is
// charged once per step for it.
//
// Held gradients: every pass runs with the part's gradients already held (the constant each
// AdamW step is given, then what the window's passes add to it), so each parameter's gradient
// is added to the one it holds, as in a training step after its first micro-batch; a pass
// after zero_grad would write it fresh and miss that addition (about 0.5 ms a micro-batch for
// a 4-layer, 128-wide GPT-2 on one core: 2.6% of its micro-batch of 2, measured in pairs by
// CPU time). A step's first micro-batch is so priced one addition high.
//
// Inputs: the ids and the targets spread over the whole vocabulary (profile_tokens), as real
// text does: at tp > 1 the embedding's rows and the loss's targets are split over the ranks
// by vocabulary, and one constant token would put all of that work on one rank, which
// training does not (for the accuracy benchmark's model the difference between the two tp-2
// ranks' compute was within noise either way, under 0.7 ms of a 27 ms pass: its embedding
// and loss are small; a large vocabulary's are not).
//
// Waits at tp > 1: a pass waits in its collectives as a training micro-batch does. Traced
// (HETU_WAIT_TRACE, scripts/bench/tp_wait_trace.py) for the accuracy benchmark's tp2-aa, 2
// ranks on 2 cores, quiet stretches of a busy machine: the same 21 collectives per tp-2
// micro-batch of 4 in both; 2.4-3.4 ms of a 26-29 ms pass in them against 2.7-3.3 ms (once
// 5.2) of training's 25-28 ms; the ranks start each pass 0.01-0.1 ms apart (the first
// collective absorbs no skew); the rest is on the CPU (off-CPU < 0.1 ms), and is where a pass ran
// 0-18% longer than training's micro-batch, by profile (the same job profiled twice differed
// as much; so did the same job's tp-2 micro-batch-4 pass in 5 profiles run one after another,
// 27.6-30.4 ms where it ran undisturbed, thread CPU time = wall time: the machine's speed
// moves from one process to the next by more than one profile's windows disagree, and more
// windows do not remove that). Under load both ranks at times share one core (off-CPU about the partner's
// compute, 15-57 involuntary switches per micro-batch), in profile and training alike.
//
// Emulated devices: training sleeps (F - 1) x the wall time of the compute before each
// message and pays any oversleep (a late wake-up on a busy machine) back from its next
// sleeps, so compute costs F x its wall time there on average (Note [Emulated devices];
// [straggler] paces by CPU time instead). Here likewise: each piece is recorded as
// `pacing.slowdown` x its wall time, and `pacing.settle` sleeps the slowdown owed outside
// every timing, after each micro-batch's forward and after its backward, where a pipeline
// stage sends, so the rank idles as in training (the other ranks see the same load). Inside
// the timing, a late wake-up would land in one piece and its credit shorten the next ones
// (their sum holds, each piece's own time does not), and a sleep after every piece would make
// every piece start cold (caches, clock speed), which training's pieces do not.
//
//   PartTimes t = time_part(model, device, micro_batches, 128, {2.0, settle});
//   t.micro_batches[2].layer_forward_s;   // one layer at micro_batches[2], the emulated device's
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "lib/core/device.h"
#include "lib/models/language_model.h"

namespace hetu::profile {

struct PieceTimes {
  double embed_forward_s = 0, embed_backward_s = 0;
  double layer_forward_s = 0, layer_backward_s = 0;  // per layer, averaged over the layers
  double head_forward_s = 0, head_backward_s = 0;
  double layer_activation_bytes = 0;                 // per layer, per micro-batch; 0 where not countable
  // In an estimate: the windows' disagreement, the median absolute deviation of the windows'
  // whole micro-batch times (every piece, forward and backward) over their median. 0.01: the
  // windows were typically within 1% of one another.
  double spread = 0;
};

struct ProfileWindows {
  int warmup = 1;    // windows run and discarded
  int measured = 11;  // windows the estimate is taken from (the middle third and more: 5 of 11)
};

struct PartTimes {
  std::vector<PieceTimes> micro_batches;  // one per micro-batch size asked for, in that order
  double optimizer_s = 0;                 // one AdamW step over the part's parameters
};

// How a rank's compute is paced: the emulated device's slowdown (1: none) and what sleeps
// it (EmulatedCommunicator::settle_compute: the slowdown owed for the compute since the
// last call, whatever ran in between).
struct ComputePacing {
  double slowdown = 1;
  std::function<void()> settle = [] {};
  // A piece that communicates (a tp layer's all_reduce) pays the slowdown owed at that point,
  // inside its timing. `slept`: seconds slept so far for the slowdown
  // (EmulationStats::slowdown_sleep_s), taken out of the piece. `emulated`: the emulated
  // compute so far (EmulatedCommunicator::emulated_compute_s: the stretches between
  // communications times the slowdown, in the time it paces by); when set, a piece is that
  // part plus the rest of its wall time (the communication and the wait for the group) once,
  // not slowdown x all of it. Unset: slowdown x the wall time less the sleep.
  std::function<double()> slept = [] { return 0.0; };
  std::function<double()> emulated = {};
};

// The profile's token ids, (micro_batch, seq_len) i64 on the CPU: from `first`, each the last
// plus a stride coprime to `vocab` near 0.618 x vocab (mod vocab), so that any run of them
// covers the vocabulary evenly.
Tensor profile_tokens(int64_t micro_batch, int64_t seq_len, int64_t vocab, int64_t first);

// A part's measured windows, gathered over one or more measure_windows calls (profile_cluster
// takes them in rounds, interleaving its tp degrees: Note [Profile windows]).
struct PartWindows {
  std::vector<std::vector<PieceTimes>> micro_batches;  // per micro-batch size, one per window
  std::vector<double> optimizer_s;                     // one AdamW step per window
};

// Runs `windows` of the part (its warm-up windows, then its measured ones) at each of
// `micro_batches`, and appends the measured ones to `into`.
void measure_windows(const LanguageModel& model, Device device, std::span<const int64_t> micro_batches,
                     int64_t seq_len, const ComputePacing& pacing, ProfileWindows windows, PartWindows& into);

// The estimate over every window gathered (`layers`: the part's).
PartTimes estimate_part(const PartWindows& windows, int64_t layers);

// The part's pieces at each of `micro_batches`: measure_windows once, then estimate_part.
PartTimes time_part(const LanguageModel& model, Device device, std::span<const int64_t> micro_batches,
                    int64_t seq_len, const ComputePacing& pacing, ProfileWindows windows = {});

// The estimate from one micro-batch size's windows (`layers`: the part's, for the spread).
PieceTimes estimate_windows(const std::vector<PieceTimes>& windows, int64_t layers);

// The windows Note [Profile windows] keeps, by their whole-pass `totals`: all but the third
// (rounded down) with the shortest and the third with the longest (ties in window order).
// Throws on no windows.
std::vector<size_t> middle_windows(const std::vector<double>& totals);
// The mean of `samples` over their middle windows.
double window_trimmed_mean(const std::vector<double>& samples);
// The median of `samples` (of an even count, the mean of the middle two). Throws on none.
double window_median(std::vector<double> samples);
// The median absolute deviation of `samples` over their median (0 when the median is 0).
double window_spread(const std::vector<double>& samples);

}  // namespace hetu::profile
