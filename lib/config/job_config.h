// The job file as typed structs, one per TOML table ([job] [model] [data] [training]
// [optimizer] [lr_schedule] [checkpoint] [cluster] [parallel]). A JobConfig is always the
// *resolved* form: flavor expanded, --set overrides applied, defaults filled, the dp/tp/pp
// shorthand expanded into explicit replica → stage → device groups, and every cross-field
// rule checked. See docs/config.md for the schema and load_job_config() in config.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/autograd/recompute.h"
#include "lib/models/model_config.h"

namespace hetu::config {

// none: shards were tokenized outside hetu (e.g. LLaMA's SentencePiece); ids < vocab.
// tiktoken: a .tiktoken ranks file (data.vocab) with a built-in pattern (data.tokenizer_pattern).
enum class Tokenizer { byte, gpt2, none, tiktoken };
// Compute precision. fp64 (CPU only) is the numerics reference for the mixed-precision path:
// f64 activations over the same f32 master weights. fp16: f16 activations over f32 master
// weights with a dynamic loss scale (lib/optim/loss_scaler.h), for GPUs without bf16.
enum class Precision { fp32, bf16, fp64, fp16 };
enum class LrDecay { constant, linear, cosine };
enum class PipelineSchedule { gpipe, one_f_one_b };

// One device of the cluster: the index-th device of node `host` ("gpu-a:3").
struct DeviceId {
  std::string host;
  int64_t index = 0;
  bool operator==(const DeviceId&) const = default;
  auto operator<=>(const DeviceId&) const = default;
  std::string str() const { return host + ":" + std::to_string(index); }
};

// Inclusive range of transformer layers ("0-6" = layers 0..6).
struct LayerRange {
  int64_t first = 0;
  int64_t last = 0;
  bool operator==(const LayerRange&) const = default;
  int64_t count() const { return last - first + 1; }
};

struct JobSection {
  std::string name = "hetu";
  std::string out_dir = "runs/{name}";  // resolved: "{name}" replaced
  uint64_t seed = 1234;
  bool operator==(const JobSection&) const = default;
};

enum class Sampling { shuffled, sequential };
// How sequences are cut from the token stream: fixed windows across documents, or whole
// documents packed per micro-batch (lib/dataset/document_packing.h).
enum class Packing { windows, documents };

// data.balance_window's largest value: a window's formation grows with its batches.
inline constexpr int64_t kMaxBalanceWindow = 64;

struct DataSection {
  std::string train;                  // glob of llm.c token shards
  std::string val;                    // optional
  Tokenizer tokenizer = Tokenizer::gpt2;
  std::string vocab;                  // gpt2: folder with encoder.json, vocab.bpe ("" = $HETU_GPT2_VOCAB); tiktoken: the .tiktoken file
  std::string tokenizer_pattern;      // tiktoken only: cl100k | o200k | llama3
  Sampling sampling = Sampling::shuffled;
  Packing packing = Packing::windows;
  int64_t balance_window = 1;         // documents: global batches formed together (lib/dataset/window_packing.h)
  bool operator==(const DataSection&) const = default;
};

struct TrainingSection {
  int64_t steps = 0;
  int64_t global_batch = 0;           // sequences per optimizer step, whole cluster
  int64_t seq_len = 0;
  int64_t micro_batch = 1;            // default per replica
  Precision precision = Precision::fp32;
  Precision grad_reduce_dtype = Precision::fp32;  // fp32 | bf16: gradients summed across ranks in it
  double grad_clip = 1.0;             // global-norm clipping; 0 disables
  double loss_scale_init = 65536;     // fp16 only: the first loss scale (2^16), >= 1
  int64_t loss_scale_window = 1000;   // fp16 only: clean steps after which the scale doubles, >= 1
  int64_t eval_every = 0;             // 0: never
  int64_t eval_steps = 20;            // validation batches per evaluation
  int64_t log_every = 10;
  int64_t threads = 0;                // per rank, for OpenMP and OpenBLAS; 0: HETU_NUM_THREADS or all cores
  std::string trace;                  // steps to trace, "20-22" or "7" (1-based); "" none
  double comm_timeout_s = 600;        // deadline of one blocking communication; 0: none
  bool operator==(const TrainingSection&) const = default;
};

struct OptimizerSection {
  std::string name = "adamw";
  double lr = 3e-4;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;          // applied to tensors with ndim >= 2
  bool operator==(const OptimizerSection&) const = default;
};

struct LrScheduleSection {
  int64_t warmup_steps = 0;
  LrDecay decay = LrDecay::cosine;
  double min_lr_ratio = 0.1;
  bool operator==(const LrScheduleSection&) const = default;
};

struct CheckpointSection {
  int64_t every = 0;                  // 0: only at the end
  int64_t keep = 3;
  std::string resume = "auto";        // auto | never | path to a checkpoint
  std::string init_from;              // a hetu checkpoint whose parameters start a fresh run
  bool operator==(const CheckpointSection&) const = default;
};

struct NodeSection {
  std::string host;
  std::string device_type;            // a name in the device catalogue
  int64_t count = 0;
  // Rehearsal of a slow network (CPU nodes): messages between ranks of this node and another
  // node are delayed by latency + bytes / bandwidth. 0: not emulated (no delay from this node).
  double emulate_link_gbps = 0;
  double emulate_link_latency_us = 0;
  // The node's network as the planner assumes it (any kind; nothing is emulated): between two
  // nodes the smaller bandwidth and the larger latency. 0: the cost model's assumption.
  double link_gbps = 0;
  double link_latency_us = 0;
  bool operator==(const NodeSection&) const = default;
};

struct ClusterSection {
  std::string device_catalog = "builtin";  // or a TOML file extending the builtin one
  // true: rank r drives the r-th device of the cluster in node order, whatever machine it runs
  // on (made-up hosts rehearse a multi-node cluster under mpirun on one machine).
  bool rehearse = false;
  std::vector<NodeSection> nodes;
  int64_t num_devices() const;
  bool operator==(const ClusterSection&) const = default;
};

// Level 3: one pipeline stage, its device group (size = tp) and its layers.
struct StageSection {
  std::vector<DeviceId> devices;
  LayerRange layers;
  // `recompute` of the stage, else of its layout ([parallel] or the strategy); default none.
  autograd::Recompute recompute = autograd::Recompute::none;
  int64_t tp() const { return static_cast<int64_t>(devices.size()); }
  bool operator==(const StageSection&) const = default;
};

// Level 2: one data-parallel replica (a pipeline), with its own share and schedule.
struct ReplicaSection {
  double batch_share = 1;
  int64_t micro_batch = 1;
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  std::vector<StageSection> stages;
  int64_t num_devices() const;
  bool operator==(const ReplicaSection&) const = default;
};

// The homogeneous shorthand, kept for display; `replicas` is what everything uses.
struct ParallelShorthand {
  int64_t dp = 1;
  int64_t tp = 1;
  int64_t pp = 1;
  std::string order = "dp-pp-tp";     // outermost first
  std::vector<DeviceId> devices;      // the devices spread over, in order; empty: the cluster's
  bool operator==(const ParallelShorthand&) const = default;
};

struct ParallelSection {
  std::vector<ReplicaSection> replicas;      // level 1
  std::optional<ParallelShorthand> shorthand;  // set when the file used dp/tp/pp
  int64_t zero = 0;  // 1: ZeRO-1, optimizer state and f32 master weights split over each parameter's holders
  // `auto = true`: hetu train plans the layout at launch (lib/plan/auto_layout.h); until then
  // `replicas` hold data parallelism over every device. `profile`: the hetu profile file it
  // plans from (absolute; empty: it profiles the cluster first, on all ranks).
  bool auto_plan = false;
  std::string profile;
  int64_t num_devices() const;
  // Sequences per optimizer step for replica r (global_batch split by batch_share).
  int64_t replica_batch(size_t r, int64_t global_batch) const;
  bool operator==(const ParallelSection&) const = default;
};

// [straggler]: re-planning around slow devices while training (lib/runtime/straggler.h).
struct StragglerSection {
  bool enabled = false;
  double threshold = 1.2;   // out of line at >= threshold x (or <= 1/threshold x) the expected compute
  int64_t window = 5;       // for this many consecutive steps
  double min_gain = 0.10;   // switch when the new layout is predicted this much faster
  std::string profile;      // the hetu profile its cost model predicts from without [parallel] auto (absolute)
  bool operator==(const StragglerSection&) const = default;
};

// [[parallel.strategy]]: a named layout the run can switch to; the same keys as [parallel].
struct StrategySection {
  std::string name;
  ParallelSection parallel;
  bool operator==(const StrategySection&) const = default;
};

// [[parallel.switch]]: after step `at_step` completes, the run continues under `strategy`
// (a [[parallel.strategy]] name, or "default": [parallel]).
struct SwitchSection {
  int64_t at_step = 0;
  std::string strategy;
  bool operator==(const SwitchSection&) const = default;
};

// [[parallel.bucket]]: the documents (pieces) of up to max_len tokens not taken by an earlier
// bucket run under `strategy` (a [[parallel.strategy]] name, or "default"); the last bucket
// has no max_len and takes the rest (lib/dataset/bucket_batcher.h).
struct BucketSection {
  std::optional<int64_t> max_len;
  std::string strategy;
  bool operator==(const BucketSection&) const = default;
};

// The name of [parallel] as a strategy.
inline constexpr const char* kDefaultStrategy = "default";

struct JobConfig {
  std::string source;                 // the job file path as given
  JobSection job;
  ModelConfig model;
  DataSection data;
  TrainingSection training;
  OptimizerSection optimizer;
  LrScheduleSection lr_schedule;
  CheckpointSection checkpoint;
  ClusterSection cluster;
  ParallelSection parallel;               // the strategy at step 0 ("default")
  std::vector<StrategySection> strategies;  // in file order
  std::vector<SwitchSection> switches;      // in step order
  std::vector<BucketSection> buckets;       // in increasing max_len; empty: one layout for every batch
  StragglerSection straggler;

  // The layout of strategy `name` ("default": parallel); throws when there is none.
  const ParallelSection& strategy(const std::string& name) const;
  // The strategy in effect after `step` optimizer steps (the last switch at or before it).
  std::string strategy_after(int64_t step) const;
  // Every device some strategy's groups name, in cluster order.
  std::vector<DeviceId> strategy_devices() const;
  // [parallel] auto = true with documents packing and [[parallel.strategy]] layouts: hetu train
  // plans each step's buckets over the strategies (lib/plan/auto_buckets.h).
  bool plans_buckets() const {
    return parallel.auto_plan && data.packing == Packing::documents && !strategies.empty();
  }

  // Sequences per optimizer step for replica r (global_batch split by batch_share).
  int64_t replica_batch(size_t r) const;
  int64_t replica_micro_batches(size_t r) const;
  bool operator==(const JobConfig&) const = default;
};

std::string_view to_string(Tokenizer value);
std::string_view to_string(Precision value);
std::string_view to_string(LrDecay value);
std::string_view to_string(PipelineSchedule value);
std::string_view to_string(Sampling value);
std::string_view to_string(Packing value);

}  // namespace hetu::config
