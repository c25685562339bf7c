// Documents priced under a strategy. See Note [Documents under a strategy].
#include "lib/plan/document_cost.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "lib/pipeline/bucket_rows.h"
#include "lib/util/error.h"

namespace hetu::plan {

// Note [Documents under a strategy]
// A strategy's stage costs are priced once, at each replica's micro-batch of priced_tokens
// tokens in sequences of priced_seq_len (estimate_stage): each forward and backward is a part per token
// and an attention part (StageCost::attention_*_s) that grows with the square of a sequence's
// length; the priced micro-batch's squares sum to priced_tokens x priced_seq_len. A
// micro-batch of t tokens whose documents' squares sum to q then takes
//   (forward_s - attention_forward_s) x t / priced_tokens + attention_forward_s x q / (priced_tokens x priced_seq_len)
// (the same for the backward; the send scales with t). Its activations scale with t (the
// varlen kernels keep no T x T matrix), the training state does not (peak_bytes,
// cost_model.h). A strategy that does not hold the parameters runs on a compute copy of them
// (lib/runtime/bucketed_engine.h, allocated only while its buckets run): its devices keep the
// optimize strategy's training state throughout, so a micro-batch there is priced on top of
// that state (resident_bytes) plus the copy's parameters and gradients (two f32 copies of its
// shard), with no AdamW state of its own. A set of documents is split over the strategy's replicas by their shares,
// tokens and Σ L² alike (the cost-balanced packing, lib/dataset/document_packing.h, evens both per
// share), each replica packing its part into alike micro-batches (ReplicaPart: fluid, so a
// set of few documents is priced as if it split evenly) of its micro-batch's rows, each as
// long as the set's longest document needs (lib/pipeline/bucket_rows.h: what the bucket
// batcher packs): a micro-batch holds micro_batch_tokens / row_factor tokens, and the part
// runs in as many as its tokens fill. It fits when a micro-batch of that many tokens fits
// every device with m of them in flight (m at least the stages: a full pipeline, since rows
// hold whole documents and replicas whole micro-batches, the runtime may run more than the
// tokens fill) (max_fitting_tokens(m); the gradients count as held
// even with one micro-batch, since a bucket's accumulate with the other buckets'): so a
// memory limit keeps long documents (long rows, big micro-batches) off a strategy that
// short ones (short rows) fit. The set runs in the slowest replica's pipeline time
// (pipeline_time) plus the strategy's switch_s.
// Note [Fixed cost per micro-batch]
// Not all of a micro-batch's time shrinks with its tokens: every layer's kernels launch and
// every tp collective and pipeline send pays its latency however short the rows are
// (lib/pipeline/bucket_rows.h: a short bucket runs many small micro-batches). A replica's
// `fixed` holds, per stage, that part of the priced times (the intercept a of a fit time =
// a + b x rows over the profile's micro-batch sizes, and the messages' latencies, app/
// micro_batch_overhead.h); the rest scales with the tokens and squares as above. So m
// micro-batches of t tokens take m x fixed + (scaled part of m t tokens) on one stage, and a
// bucket split into more, shorter micro-batches is priced higher. A compute copy's buckets
// also pay its own gradient sync over its replicas (in switch_s, beside the switch).
// Note [Padding in a micro-batch]
// A micro-batch's rows are fixed-shape: every token slot, padding included, goes through the
// projections, the MLP and the LM head (lib/dataset/document_packing.h), and a replica runs whole
// micro-batches of full rows (lib/dataset/bucket_batcher.h rounds its share up). So a part is
// priced as `count` micro-batches of `holds` slots each (the per-token part) with the part's
// Σ L² spread over them (attention runs on documents only), not as its tokens alone. The rows a
// bucket's documents need are more than their tokens fill: the batcher packs whole documents
// by next-fit in stream order, and a row ends where the next document does not fit (at rows of
// 256, documents of 130 to 250 tokens take a row each). A load that knows its rows
// (DocumentLoad::rows, the bucket planner counts them with the batcher's next-fit) is split
// over the replicas by them; one that does not, by its tokens.
void DocumentLoad::add(int64_t length) {
  HT_USAGE_CHECK(length >= 1, "document cost: a document of {} tokens", length);
  ++documents;
  const auto l = static_cast<double>(length);
  tokens += l;
  square_tokens += l * l;
  longest = std::max(longest, length);
}

int64_t DocumentStrategy::micro_batch_tokens() const {
  int64_t least = std::numeric_limits<int64_t>::max();
  for (const DocumentReplica& r : replicas) least = std::min(least, r.micro_batch_tokens);
  return least;
}

StageTimes fixed_times(const DocumentReplica& replica, size_t stage) {
  return replica.fixed.empty() ? StageTimes{} : replica.fixed.at(stage);
}

StageTimes scaled_times(const DocumentStrategy& strategy, size_t r, size_t stage, double tokens,
                        double square_tokens) {
  const DocumentReplica& replica = strategy.replicas.at(r);
  const StageCost& cost = replica.stages.at(stage);
  const StageTimes fixed = fixed_times(replica, stage);
  const double priced = replica.priced_tokens;
  const double per_token = tokens / priced;
  const double per_square = square_tokens / (priced * strategy.priced_seq_len);
  StageTimes t;
  t.forward_s = (cost.times.forward_s - cost.attention_forward_s - fixed.forward_s) * per_token +
                cost.attention_forward_s * per_square;
  t.backward_s = (cost.times.backward_s - cost.attention_backward_s - fixed.backward_s) * per_token +
                 cost.attention_backward_s * per_square;
  t.send_s = (cost.times.send_s - fixed.send_s) * per_token;
  return t;
}

StageTimes micro_batch_times(const DocumentStrategy& strategy, size_t r, size_t stage, double tokens,
                             double square_tokens) {
  StageTimes t = scaled_times(strategy, r, stage, tokens, square_tokens);
  const StageTimes fixed = fixed_times(strategy.replicas.at(r), stage);
  t.forward_s += fixed.forward_s;
  t.backward_s += fixed.backward_s;
  t.send_s += fixed.send_s;
  return t;
}

double micro_batch_peak_bytes(const DocumentReplica& replica, const StageCost& stage, double tokens,
                              int64_t in_flight, int64_t micro_batches) {
  const double scale = tokens / replica.priced_tokens;
  StageCost scaled = stage;
  scaled.activation_bytes *= scale;
  scaled.head_activation_bytes *= scale;
  scaled.workspace_bytes *= scale;
  if (!replica.compute_copy) return peak_bytes(scaled, in_flight, micro_batches);
  const double state = replica.resident_bytes + 2 * stage.param_bytes;  // the copy and its gradients
  const double pipeline = state + static_cast<double>(in_flight) * scaled.activation_bytes -
                          scaled.head_activation_bytes + scaled.workspace_bytes;
  return std::max(pipeline, state + stage.sync_buffer_bytes);
}

void price_as_compute_copy(DocumentStrategy& lane, const DocumentStrategy& optimize, double memory_share) {
  double resident = 0;
  for (const DocumentReplica& r : optimize.replicas) {
    for (const StageCost& stage : r.stages) {
      resident = std::max(resident, training_bytes_per_param_byte(stage.zero_state_share) * stage.param_bytes +
                                        stage.reserved_bytes);
    }
  }
  for (DocumentReplica& r : lane.replicas) {
    r.compute_copy = true;
    r.resident_bytes = resident;
    for (double& memory : r.memory_bytes) memory *= memory_share;
  }
}

namespace {

// How replica `r` packs its part of `load` (tokens > 0): micro-batches of its rows of the
// bucket's row length (bucket_rows.h), as many rows as a micro-batch of seq_len rows, each
// seq_len / row_factor long, so a micro-batch holds `holds` tokens (padding included: what its
// memory holds) and the part runs in `count` of them, as many as its tokens fill. Its memory
// is priced at `priced_count`, at least a full pipeline in flight: a row holds whole documents
// and a replica runs whole micro-batches, so the runtime may run more of them than the tokens fill.
struct MicroBatching {
  double part = 0, tokens = 0;  // its share of the load and the tokens of that share
  int64_t holds = 0, count = 0, priced_count = 0;
  bool too_long = false;        // the longest document fits no micro-batch (nothing else set)
};
MicroBatching micro_batching(const DocumentStrategy& strategy, size_t replica, const DocumentLoad& load) {
  double total_share = 0;
  for (const DocumentReplica& r : strategy.replicas) total_share += r.share;
  const DocumentReplica& mine = strategy.replicas.at(replica);
  MicroBatching out;
  out.part = mine.share / total_share;
  out.tokens = out.part * load.tokens;
  if (out.tokens <= 0) return out;
  const int64_t seq_len = strategy.row_tokens;
  if (load.longest > mine.micro_batch_tokens || load.longest > seq_len) {
    out.too_long = true;
    return out;
  }
  const int64_t row_length = pipeline::bucket_row_length(seq_len, load.longest);
  out.holds = mine.micro_batch_tokens / pipeline::bucket_row_factor(seq_len, load.longest);
  // Its rows (Note [Padding in a micro-batch]), in micro-batches of holds / row_length rows.
  const double rows = out.part * (load.rows > 0 ? load.rows : load.tokens / static_cast<double>(row_length));
  const double rows_per_micro_batch = static_cast<double>(out.holds) / static_cast<double>(row_length);
  out.count = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(rows / rows_per_micro_batch - 1e-9)));
  out.priced_count = std::max<int64_t>(out.count, static_cast<int64_t>(mine.stages.size()));
  return out;
}

// Stage `s`'s device peak running `micro_batches` micro-batches of `tokens` tokens. A
// bucket's gradients accumulate with the step's other buckets': held throughout, as in a step
// of more than one micro-batch (peak_bytes).
double stage_peak_bytes(const DocumentReplica& r, size_t s, int64_t tokens, int64_t micro_batches) {
  const auto stages = static_cast<int64_t>(r.stages.size());
  const int64_t in_flight = micro_batches_in_flight(r.schedule, stages, micro_batches, static_cast<int64_t>(s));
  return micro_batch_peak_bytes(r, r.stages.at(s), static_cast<double>(tokens), in_flight,
                                std::max<int64_t>(2, micro_batches));
}

}  // namespace

ReplicaPart replica_part(const DocumentStrategy& strategy, size_t replica, const DocumentLoad& load,
                         const std::function<int64_t(int64_t)>& fitting) {
  const MicroBatching p = micro_batching(strategy, replica, load);
  ReplicaPart out;
  if (p.tokens <= 0) return out;
  if (p.too_long || p.holds > fitting(p.priced_count)) {
    out.fits = false;
    return out;
  }
  out.micro_batches = p.count;
  out.tokens = static_cast<double>(p.holds);  // every slot, padding included
  out.square_tokens = p.part * load.square_tokens / static_cast<double>(p.count);
  return out;
}

ReplicaPart replica_part(const DocumentStrategy& strategy, size_t replica, const DocumentLoad& load) {
  return replica_part(strategy, replica, load, [&](int64_t m) { return max_fitting_tokens(strategy, replica, m); });
}

int64_t max_fitting_tokens(const DocumentStrategy& strategy, size_t replica, int64_t micro_batches) {
  const DocumentReplica& r = strategy.replicas.at(replica);
  int64_t most = r.micro_batch_tokens;
  for (size_t s = 0; s < r.stages.size(); ++s) {
    const double memory = r.memory_bytes.at(s);
    if (memory <= 0) continue;
    auto fits = [&](int64_t tokens) { return stage_peak_bytes(r, s, tokens, micro_batches) <= memory; };
    if (fits(most)) continue;
    int64_t lo = 0, hi = most;  // fits(lo) or lo == 0; !fits(hi)
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (fits(mid) ? lo : hi) = mid;
    }
    most = lo;
  }
  return most;
}

bool load_fits(const DocumentStrategy& strategy, const DocumentLoad& load) {
  for (size_t r = 0; r < strategy.replicas.size(); ++r) {
    if (!replica_part(strategy, r, load).fits) return false;
  }
  return true;
}

DocumentLoad full_batch_load(int64_t global_batch, int64_t seq_len, int64_t longest) {
  HT_USAGE_CHECK(global_batch >= 1 && longest >= 1 && longest <= seq_len,
                 "document cost: a global batch of {} rows of {} tokens of documents of {}", global_batch, seq_len,
                 longest);
  DocumentLoad load;
  load.tokens = static_cast<double>(global_batch * seq_len);
  load.documents = std::max<int64_t>(1, global_batch * seq_len / longest);
  load.square_tokens = load.tokens * static_cast<double>(longest);
  load.longest = longest;
  return load;
}

std::optional<MemoryShortfall> memory_shortfall(const DocumentStrategy& strategy, const DocumentLoad& load,
                                                std::optional<int64_t> micro_batches) {
  for (size_t r = 0; r < strategy.replicas.size(); ++r) {
    const MicroBatching p = micro_batching(strategy, r, load);
    if (p.tokens <= 0 || p.too_long) continue;
    const DocumentReplica& replica = strategy.replicas[r];
    for (size_t s = 0; s < replica.stages.size(); ++s) {
      const double memory = replica.memory_bytes.at(s);
      const double needed = stage_peak_bytes(replica, s, p.holds, micro_batches.value_or(p.priced_count));
      if (memory > 0 && needed > memory) return MemoryShortfall{r, s, p.holds, needed, memory};
    }
  }
  return std::nullopt;
}

double load_time_s(const DocumentStrategy& strategy, const DocumentLoad& load) {
  if (load.documents == 0) return 0;
  double slowest = 0;
  for (size_t r = 0; r < strategy.replicas.size(); ++r) {
    const ReplicaPart part = replica_part(strategy, r, load);
    if (!part.fits) return kDocumentsDoNotFit;
    if (part.micro_batches == 0) continue;
    std::vector<StageTimes> times;
    for (size_t stage = 0; stage < strategy.replicas[r].stages.size(); ++stage) {
      times.push_back(micro_batch_times(strategy, r, stage, part.tokens, part.square_tokens));
    }
    slowest = std::max(slowest, pipeline_time(strategy.replicas[r].schedule, part.micro_batches, times).makespan_s);
  }
  return slowest + strategy.switch_s;
}

double switch_estimate_s(const std::vector<DocumentReplica>& replicas, const Link& link) {
  double slowest = 0;
  for (const DocumentReplica& r : replicas) {
    for (const StageCost& stage : r.stages) slowest = std::max(slowest, 2 * link.transfer_s(stage.param_bytes));
  }
  return slowest;
}

DocumentStrategy document_strategy(std::string name, const std::vector<ReplicaCost>& costs,
                                   const std::vector<std::vector<double>>& memory_bytes,
                                   const std::vector<int64_t>& micro_batch, int64_t seq_len, const Link* reshard) {
  HT_USAGE_CHECK(!costs.empty() && memory_bytes.size() == costs.size() && micro_batch.size() == costs.size() &&
                     seq_len >= 1,
                 "document cost: strategy '{}' is not a priced layout", name);
  DocumentStrategy s;
  s.name = std::move(name);
  s.priced_seq_len = static_cast<double>(seq_len);
  s.row_tokens = seq_len;
  for (size_t r = 0; r < costs.size(); ++r) {
    HT_USAGE_CHECK(memory_bytes[r].size() == costs[r].stages.size() && micro_batch[r] >= 1,
                   "document cost: strategy '{}' replica {} has no memory per stage or micro-batch", s.name, r);
    DocumentReplica replica;
    replica.schedule = costs[r].schedule;
    replica.share = static_cast<double>(costs[r].micro_batches);
    replica.stages = costs[r].stages;
    replica.memory_bytes = memory_bytes[r];
    replica.priced_tokens = static_cast<double>(micro_batch[r] * seq_len);
    replica.micro_batch_tokens = micro_batch[r] * seq_len;
    s.replicas.push_back(std::move(replica));
  }
  if (reshard != nullptr) {  // a compute copy: its own gradient sync, then the switch
    double sync = 0;
    for (const DocumentReplica& r : s.replicas)
      for (const StageCost& stage : r.stages) sync = std::max(sync, stage.grad_sync_s);
    s.switch_s = sync + switch_estimate_s(s.replicas, *reshard);
  }
  return s;
}

DocumentStrategy document_strategy(std::string name, const SearchCluster& cluster, const SearchJob& job,
                                   const SearchedLayout& layout, const Link* reshard) {
  HT_USAGE_CHECK(layout.costs.size() == layout.replicas.size() && !layout.costs.empty(),
                 "document cost: strategy '{}' is not a priced layout", name);
  std::vector<double> device_memory;  // per device, in node order
  for (const SearchNode& node : cluster.nodes) {
    device_memory.insert(device_memory.end(), static_cast<size_t>(node.devices),
                         cluster.types.at(static_cast<size_t>(node.type)).memory_bytes);
  }
  std::vector<std::vector<double>> memory;
  for (const SearchedReplica& replica : layout.replicas) {
    std::vector<double> stages;
    for (const SearchedStage& stage : replica.stages) {
      double least = 0;  // the smallest of its devices' (0: unbounded)
      for (int64_t d = stage.first_device; d < stage.first_device + stage.devices; ++d) {
        const double m = device_memory.at(static_cast<size_t>(d));
        if (m > 0) least = least > 0 ? std::min(least, m) : m;
      }
      stages.push_back(least);
    }
    memory.push_back(std::move(stages));
  }
  return document_strategy(std::move(name), layout.costs, memory,
                           std::vector<int64_t>(layout.costs.size(), job.micro_batch), job.seq_len, reshard);
}

}  // namespace hetu::plan
