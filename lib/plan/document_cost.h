// The cost of running a set of documents (their lengths) under one strategy (a layout), from
// the cost model's stage costs: per stage, a micro-batch's forward and backward split into a
// part per token (projections, MLP, LM head, tp collectives, sends) and attention, which grows
// with the square of each document's length (StageCost::attention_*_s), scaled from the
// micro-batch the stages were priced at; the replicas run their share of the documents side
// by side (pipeline_time.h), and a device that cannot hold a micro-batch containing the
// longest document makes the strategy infeasible for them (see Note [Documents under a
// strategy] in document_cost.cpp).
//
//   DocumentStrategy s = document_strategy("long", cluster, job, layout, &link);
//   DocumentLoad load;  for (int64_t L : lengths) load.add(L);
//   load_time_s(s, load);   // seconds; kNoFit when a device cannot hold it
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "lib/plan/cost_model.h"
#include "lib/plan/layout_search.h"

namespace hetu::plan {

inline constexpr double kDocumentsDoNotFit = std::numeric_limits<double>::infinity();

// What a set of documents asks of a strategy.
struct DocumentLoad {
  int64_t documents = 0;
  double tokens = 0;         // Σ L
  double square_tokens = 0;  // Σ L², attention's work
  int64_t longest = 0;
  // The rows of the load's row length (bucket_row_length(row_tokens, longest)) its documents
  // fill as the bucket batcher packs them (next-fit in stream order leaves gaps a document does
  // not fit; Note [Padding in a micro-batch]); 0: as many as the tokens fill.
  double rows = 0;
  void add(int64_t length);
};

struct DocumentReplica {
  pipeline::ScheduleKind schedule = pipeline::ScheduleKind::one_f_one_b;
  double share = 1;                   // its part of the documents, relative to the others' (> 0)
  std::vector<StageCost> stages;      // per device, priced at its micro-batch of priced_tokens
  std::vector<double> memory_bytes;   // per stage, its devices' memory (0: unbounded)
  double priced_tokens = 1;           // the micro-batch the stage costs were priced at (in
                                      // sequences of DocumentStrategy::priced_seq_len)
  int64_t micro_batch_tokens = 1;     // the most tokens one of its micro-batches packs
  // A compute copy (a strategy that does not hold the parameters, Note [Documents under a
  // strategy]): its devices keep resident_bytes of the optimize strategy's (its training state
  // and reserved memory, the most any device keeps) beside the copy's f32 parameters and
  // gradients, in place of a training state of their own.
  bool compute_copy = false;
  double resident_bytes = 0;
  // Per stage, what each of its micro-batches pays whatever its tokens (kernel launches and
  // per-layer overheads, the latency of its tp collectives and sends; Note [Fixed cost per
  // micro-batch] in document_cost.cpp): a part of the stage's times, at most their per-token
  // part. Empty: none (every time scales with the tokens).
  std::vector<StageTimes> fixed;
  bool operator==(const DocumentReplica&) const = default;
};

struct DocumentStrategy {
  std::string name;
  std::vector<DocumentReplica> replicas;
  double priced_seq_len = 1;          // the sequences its stage costs were priced at
  // The rows its micro-batches pack (the job's seq_len, dividing every micro_batch_tokens),
  // cut shorter for a set of short documents (lib/pipeline/bucket_rows.h).
  int64_t row_tokens = 1;
  // Per bucket run under it: its gradients summed over its replicas, parameters in and gradients
  // back (0: it holds them).
  double switch_s = 0;
  // The longest document every replica's micro-batch may pack (each takes a share of a bucket).
  int64_t micro_batch_tokens() const;
};

// One micro-batch of replica `r` of `tokens` tokens whose documents' squared lengths sum to
// `square_tokens`, through its stage `stage`: fixed_times plus scaled_times.
StageTimes micro_batch_times(const DocumentStrategy& strategy, size_t r, size_t stage, double tokens,
                             double square_tokens);
// The part of that which scales with the tokens and squares (linear in both).
StageTimes scaled_times(const DocumentStrategy& strategy, size_t r, size_t stage, double tokens, double square_tokens);
// The part every micro-batch of the stage pays (DocumentReplica::fixed; zero when it has none).
StageTimes fixed_times(const DocumentReplica& replica, size_t stage);
// A device's peak holding `in_flight` of `micro_batches` micro-batches of `tokens` tokens each.
double micro_batch_peak_bytes(const DocumentReplica& replica, const StageCost& stage, double tokens,
                              int64_t in_flight, int64_t micro_batches);

// A compute copy is planned per step, with no one to see it fit: its devices' memory is taken
// at this share, the peak estimate's tested bound (within 10%, tests/e2e/plan_memory.sh).
inline constexpr double kComputeCopyMemoryShare = 0.9;

// Makes `lane` a compute copy beside `optimize` (the strategy that holds the parameters):
// every replica's devices keep the most training state and reserved memory any device of
// `optimize` keeps, and the copy's parameters and gradients, within kComputeCopyMemoryShare
// of their memory (`memory_share`: a fixed [[parallel.bucket]]'s lane, which nothing plans,
// is checked against all of it).
void price_as_compute_copy(DocumentStrategy& lane, const DocumentStrategy& optimize,
                           double memory_share = kComputeCopyMemoryShare);

// The most tokens a micro-batch of replica `r` may hold (at most its micro_batch_tokens) when it
// runs `micro_batches` of them: every stage's device holds those in flight at that size, and
// its gradients (a bucket's accumulate with the step's others).
int64_t max_fitting_tokens(const DocumentStrategy& strategy, size_t replica, int64_t micro_batches);

// How replica `r` runs its share of `load`: micro-batches and the tokens and Σ L² of each.
// micro_batches 0: no documents, or none fits (fits false).
struct ReplicaPart {
  int64_t micro_batches = 0;
  // Per micro-batch: its token slots, padding included (every slot goes through the per-token
  // part, Note [Padding in a micro-batch]), and its documents' Σ L².
  double tokens = 0, square_tokens = 0;
  bool fits = true;
};
// `fitting(m)`: max_fitting_tokens of the replica at m micro-batches (the planner tabulates it).
ReplicaPart replica_part(const DocumentStrategy& strategy, size_t replica, const DocumentLoad& load,
                         const std::function<int64_t(int64_t)>& fitting);
ReplicaPart replica_part(const DocumentStrategy& strategy, size_t replica, const DocumentLoad& load);

// True when every device of the strategy holds its micro-batches of `load` (the one with the
// longest document included) and that document fits a micro-batch.
bool load_fits(const DocumentStrategy& strategy, const DocumentLoad& load);

// A whole global batch (global_batch rows of seq_len) of documents of `longest` tokens: the most
// memory a bucket of documents of up to `longest` tokens can ask of a strategy (its rows are
// bucket_row_length(seq_len, longest) long; more of them only means more micro-batches).
DocumentLoad full_batch_load(int64_t global_batch, int64_t seq_len, int64_t longest);

// Where a strategy's memory refuses `load`: the first replica and stage (in order) whose
// device cannot hold its micro-batches of micro_batch_tokens tokens, what it would need and
// what it has (a compute copy's at kComputeCopyMemoryShare). nullopt when every device holds
// them; a document longer than a micro-batch is no memory matter (load_fits refuses it).
// `micro_batches`: every replica priced running that many (in flight as its schedule allows)
// instead of those the load fills, a full pipeline at least (what load_fits prices).
struct MemoryShortfall {
  size_t replica = 0, stage = 0;
  int64_t micro_batch_tokens = 0;
  double needed_bytes = 0, memory_bytes = 0;
};
std::optional<MemoryShortfall> memory_shortfall(const DocumentStrategy& strategy, const DocumentLoad& load,
                                                std::optional<int64_t> micro_batches = std::nullopt);

// The time to run `load` under the strategy: the slowest replica's pipeline (pipeline_time) plus
// switch_s; 0 for no documents; kDocumentsDoNotFit when !load_fits.
double load_time_s(const DocumentStrategy& strategy, const DocumentLoad& load);

// Moving a strategy's compute copy of the parameters in and its gradients back: every device
// receives its f32 parameters and sends a gradient as big over `link`, the slowest device's.
double switch_estimate_s(const std::vector<DocumentReplica>& replicas, const Link& link);

// A layout the search priced (price_layout), as a strategy for documents: stage costs at the
// job's micro-batch, memory from the cluster's device types, shares its micro-batches.
// `reshard`: the link its parameters come over (switch_estimate_s); nullptr: it holds them.
DocumentStrategy document_strategy(std::string name, const SearchCluster& cluster, const SearchJob& job,
                                   const SearchedLayout& layout, const Link* reshard);
// The same from a layout's replica costs (cost_model.h) with each stage's device memory
// ([replica][stage], 0: unbounded), each replica's micro-batch in sequences of seq_len.
DocumentStrategy document_strategy(std::string name, const std::vector<ReplicaCost>& costs,
                                   const std::vector<std::vector<double>>& memory_bytes,
                                   const std::vector<int64_t>& micro_batch, int64_t seq_len, const Link* reshard);

}  // namespace hetu::plan
