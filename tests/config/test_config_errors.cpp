// Bad job files and --set overrides, each rejected by load_job_config_text with a UsageError whose
// message names the place ("job.toml:<line>: key: ..." or "--set k=v: ...") and the problem;
// plus the TOML syntax error format and the advisory warnings (tp across nodes, idle pipeline).
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "lib/config/config.h"
#include "lib/util/error.h"
#include "tests/temp_dir.h"

namespace {

using hetu::config::load_job_config_text;

// A real ranks file, for the data.vocab of tiktoken jobs.
const std::string kRanks = std::string(HETU_SOURCE_DIR) + "/tests/data/tiktoken/cl100k_base.tiktoken";

// Valid homogeneous job: gpt2 tiny (2 layers, hidden 64, 4 heads, vocab 256, context 64) on two
// CPU devices with the dp shorthand. Line numbers are part of the expectations below.
const std::string kBase = R"([job]
name = "t"
seed = 1

[model]
arch = "gpt2"
flavor = "tiny"

[data]
train = "train_*.bin"
tokenizer = "byte"

[training]
steps = 10
global_batch = 8
seq_len = 32
micro_batch = 4
precision = "fp32"
grad_clip = 1.0

[optimizer]
name = "adamw"
lr = 1e-3
betas = [0.9, 0.95]

[lr_schedule]
warmup_steps = 2
decay = "cosine"
min_lr_ratio = 0.1

[checkpoint]
keep = 2

[cluster]
[[cluster.node]]
host = "localhost"
devices = { type = "cpu", count = 2 }

[parallel]
dp = 2
)";

// Valid heterogeneous job: an explicit llama (8 layers, 4 heads, 2 kv heads) on 4 A100 + 2 H100,
// replica 0 a 2-stage pipeline (tp 2 each) taking 4 of 12 sequences, replica 1 one tp-2 stage.
const std::string kHetero = R"([model]
arch = "llama"
layers = 8
hidden = 64
heads = 4
kv_heads = 2
ffn_hidden = 192
vocab = 256
max_seq_len = 64

[data]
train = "train_*.bin"
tokenizer = "byte"

[training]
steps = 10
global_batch = 12
seq_len = 32
micro_batch = 2

[cluster]
[[cluster.node]]
host = "gpu-a"
devices = { type = "A100-80G", count = 4 }

[[cluster.node]]
host = "gpu-b"
devices = { type = "H100-80G", count = 2 }

[[parallel.replica]]
batch_share = 1
micro_batch = 2
  [[parallel.replica.stage]]
  devices = "gpu-a:0-1"
  layers = "0-3"
  [[parallel.replica.stage]]
  devices = "gpu-a:2-3"
  layers = "4-7"

[[parallel.replica]]
batch_share = 2
  [[parallel.replica.stage]]
  devices = "gpu-b:0-1"
  layers = "0-7"
)";

// Replaces 1-based lines of `text`; a replacement may hold several lines (or none: ""), and
// every line number refers to the unedited text.
std::string edit(const std::string& text, const std::vector<std::pair<int, std::string>>& edits) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  for (const auto& [number, replacement] : edits) {
    REQUIRE(number >= 1);
    REQUIRE(static_cast<size_t>(number) <= lines.size());
    lines[static_cast<size_t>(number - 1)] = replacement;
  }
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  return out;
}

std::string edit(const std::string& text, int line, const std::string& replacement) {
  return edit(text, {{line, replacement}});
}

struct BadCase {
  const char* name;
  std::string toml;
  std::vector<std::string> overrides;
  std::string expected_substring;
};

// The message of the UsageError that loading throws, or "" (and a failed check) when it loads.
std::string load_error(const std::string& toml, const std::vector<std::string>& overrides) {
  try {
    load_job_config_text(toml, "job.toml", overrides);
  } catch (const hetu::UsageError& error) {
    return error.message();
  }
  FAIL_CHECK("loaded without a hetu::UsageError");
  return "";
}

// Appended to kBase (lines 41-48): a strategy and two buckets.
const std::string kBuckets = "[[parallel.strategy]]\nname = \"tp2\"\ntp = 2\n[[parallel.bucket]]\nmax_len = 16\n"
                             "strategy = \"default\"\n[[parallel.bucket]]\nstrategy = \"tp2\"\n";

std::vector<BadCase> bad_cases() {
  const std::string& B = kBase;
  const std::string& H = kHetero;
  // kBase with a strategy "tp2" (lines 41-43) and a switch to it after step 4 (lines 44-46).
  const std::string S = kBase + "[[parallel.strategy]]\nname = \"tp2\"\ntp = 2\n[[parallel.switch]]\nat_step = 4\n"
                                "strategy = \"tp2\"\n";
  // kBase with a strategy "tp2" (lines 41-43) and two buckets: up to 16 tokens under default
  // (lines 44-46), the rest under tp2 (lines 47-48); D packs documents, as buckets need.
  const std::string K = kBase + kBuckets;
  const std::vector<std::string> D = {"data.packing=\"documents\""};
  return {
      // ---- unknown keys ------------------------------------------------------------------
      {"unknown top-level table", B + "\n[trainig]\nsteps = 1\n", {},
       "job.toml:42: trainig: unknown key 'trainig' in the top level (did you mean 'training'?)"},
      {"unknown key in [optimizer]", edit(B, 23, "lrr = 1e-3"), {},
       "job.toml:23: optimizer.lrr: unknown key 'lrr' in [optimizer] (did you mean 'lr'?)"},
      {"unknown key in a stage", edit(H, 35, "  layers = \"0-3\"\n  tp = 2"), {},
       "job.toml:36: parallel.replica[0].stage[0].tp: unknown key 'tp' in [parallel.replica[0].stage[0]]"},
      {"unknown key in cluster.node devices", edit(B, 37, "devices = { type = \"cpu\", count = 2, cores = 8 }"), {},
       "job.toml:37: cluster.node[0].devices.cores: unknown key 'cores' in [cluster.node[0].devices]"},
      {"unknown key via --set", B, {"optimizer.lrr=1"},
       "--set optimizer.lrr=1: optimizer.lrr: unknown key 'lrr' in [optimizer] (did you mean 'lr'?)"},
      {"--set on an unknown table", B, {"trainer.steps=5"},
       "--set trainer.steps=5: trainer: unknown key 'trainer' in the top level"},

      // ---- wrong types -------------------------------------------------------------------
      {"string for integer", edit(B, 14, "steps = \"10\""), {},
       "job.toml:14: training.steps: expected an integer, got string \"10\""},
      {"float for integer", edit(B, 15, "global_batch = 8.5"), {},
       "job.toml:15: training.global_batch: expected an integer, got float 8.5"},
      {"integer for string", edit(B, 2, "name = 5"), {},
       "job.toml:2: job.name: expected a string, got integer 5"},
      {"boolean for number", edit(B, 19, "grad_clip = true"), {},
       "job.toml:19: training.grad_clip: expected a number, got boolean true"},
      {"string for boolean", edit(H, 9, "max_seq_len = 64\ntie_embeddings = \"yes\""), {},
       "job.toml:10: model.tie_embeddings: expected a boolean (true or false), got string \"yes\""},
      {"array for number", edit(B, 23, "lr = [1e-3]"), {},
       "job.toml:23: optimizer.lr: expected a number, got an array"},
      {"table for value", edit(B, 16, "seq_len = { value = 32 }"), {},
       "job.toml:16: training.seq_len: expected an integer, got a table"},
      {"bare word via --set for integer", B, {"training.steps=ten"},
       "--set training.steps=ten: training.steps: expected an integer, got string \"ten\""},

      // ---- missing required keys ----------------------------------------------------------
      {"missing model.arch", edit(B, 6, ""), {},
       "job.toml:5: model.arch: required key is missing (\"gpt2\" or \"llama\")"},
      {"missing training.steps", edit(B, 14, ""), {},
       "job.toml:13: training.steps: required key is missing (an integer)"},
      {"missing training.global_batch", edit(B, 15, ""), {},
       "job.toml:13: training.global_batch: required key is missing (an integer)"},
      {"missing training.seq_len", edit(B, 16, ""), {},
       "job.toml:13: training.seq_len: required key is missing (an integer)"},
      {"missing data.train", edit(B, 10, ""), {},
       "job.toml:9: data.train: required key is missing (a string)"},
      {"[cluster] without a node", edit(B, {{35, ""}, {36, ""}, {37, ""}}), {},
       "job.toml:34: cluster.node: required: at least one [[cluster.node]]"},
      {"stage without devices", edit(H, 34, ""), {},
       "job.toml:33: parallel.replica[0].stage[0].devices: required key is missing (a string)"},
      {"stage without layers in a 2-stage replica", edit(H, 38, ""), {},
       "job.toml:36: parallel.replica[0].stage[1].layers: required key is missing: a replica with several stages"},
      {"explicit shape incomplete", edit(H, 4, ""), {},
       "job.toml:1: model.hidden: required key is missing (no model.flavor given, so the shape must be explicit"},

      // ---- unknown names and enum values --------------------------------------------------
      {"unknown flavor", edit(B, 7, "flavor = \"huge\""), {},
       "job.toml:7: model.flavor: unknown gpt2 flavor \"huge\" (known: tiny, 124m, 350m, 774m)"},
      {"unknown arch", edit(B, 6, "arch = \"bert\""), {},
       "job.toml:6: model.arch: unknown value \"bert\" (expected one of: gpt2, llama)"},
      {"bad precision", edit(B, 18, "precision = \"fp8\""), {},
       "job.toml:18: training.precision: unknown value \"fp8\" (expected one of: fp32, bf16, fp64, fp16)"},
      {"bad decay", edit(B, 28, "decay = \"step\""), {},
       "job.toml:28: lr_schedule.decay: unknown value \"step\" (expected one of: constant, linear, cosine)"},
      {"bad schedule", edit(H, 32, "micro_batch = 2\nschedule = \"zb\""), {},
       "job.toml:33: parallel.replica[0].schedule: unknown value \"zb\" (expected one of: gpipe, 1f1b)"},
      {"bad tokenizer", edit(B, 11, "tokenizer = \"sentencepiece\""), {},
       "job.toml:11: data.tokenizer: unknown value \"sentencepiece\" (expected one of: byte, gpt2, none, tiktoken)"},
      {"bad packing", edit(B, 11, "tokenizer = \"byte\"\npacking = \"sequences\""), {},
       "job.toml:12: data.packing: unknown value \"sequences\" (expected one of: windows, documents)"},
      {"balance window 0", edit(B, 11, "tokenizer = \"byte\"\npacking = \"documents\"\nbalance_window = 0"), {},
       "job.toml:13: data.balance_window: must be in [1, 64] global batches, got 0"},
      {"balance window over 64", B, {"data.packing=\"documents\"", "data.balance_window=65"},
       "--set data.balance_window=65: data.balance_window: must be in [1, 64] global batches, got 65"},
      {"balance window with switches", S, {"data.packing=\"documents\"", "data.balance_window=2"},
       "--set data.balance_window=2: data.balance_window: forms each window's batches for the replicas' batch shares, "
       "which [[parallel.switch]] changes while training: set it to 1"},
      {"balance window over windows", edit(B, 11, "tokenizer = \"byte\"\nbalance_window = 4"), {},
       "job.toml:12: data.balance_window: forms global batches of packed documents: it needs data.packing = "
       "\"documents\""},
      {"bad optimizer name", edit(B, 22, "name = \"sgd\""), {},
       "job.toml:22: optimizer.name: unknown value \"sgd\" (expected one of: adamw)"},

      // ---- value ranges ---------------------------------------------------------------------
      {"steps 0", edit(B, 14, "steps = 0"), {}, "job.toml:14: training.steps: must be >= 1, got 0"},
      {"trace range backwards", edit(B, 14, "steps = 10\ntrace = \"5-3\""), {},
       "job.toml:15: training.trace: expected a step range such as \"20-22\" or \"7\" (steps from 1, first <= last), got \"5-3\""},
      {"trace not a range", B, {"training.trace=\"soon\""}, "training.trace: expected a step range such as \"20-22\""},
      {"trace after the last step", B, {"training.trace=\"11-12\""},
       "training.trace: the range \"11-12\" starts after the last step (training.steps = 10)"},
      {"negative seed", edit(B, 3, "seed = -1"), {}, "job.toml:3: job.seed: must be >= 0, got -1"},
      {"lr 0", edit(B, 23, "lr = 0.0"), {}, "job.toml:23: optimizer.lr: must be > 0, got 0"},
      {"negative lr via --set", B, {"optimizer.lr=-0.5"},
       "--set optimizer.lr=-0.5: optimizer.lr: must be > 0, got -0.5"},
      {"beta2 = 1", edit(B, 24, "betas = [0.9, 1.0]"), {},
       "job.toml:24: optimizer.betas: each beta must be in [0, 1), got 1"},
      {"negative beta1", edit(B, 24, "betas = [-0.1, 0.95]"), {},
       "job.toml:24: optimizer.betas: each beta must be in [0, 1), got -0.1"},
      {"three betas", edit(B, 24, "betas = [0.9, 0.95, 0.99]"), {},
       "job.toml:24: optimizer.betas: expected two numbers [beta1, beta2], got 3"},
      {"min_lr_ratio > 1", edit(B, 29, "min_lr_ratio = 1.5"), {},
       "job.toml:29: lr_schedule.min_lr_ratio: must be in [0, 1], got 1.5"},
      {"negative warmup", edit(B, 27, "warmup_steps = -1"), {},
       "job.toml:27: lr_schedule.warmup_steps: must be >= 0, got -1"},
      {"checkpoint.keep 0", edit(B, 32, "keep = 0"), {}, "job.toml:32: checkpoint.keep: must be >= 1, got 0"},
      // ---- model.rope_scaling -----------------------------------------------------------------
      {"rope_scaling on gpt2", B, {R"(model.rope_scaling={type="llama3"})"},
       "model.rope_scaling: applies to llama only"},
      {"rope_scaling without a type", B, {"model.arch=llama", "model.rope_scaling={factor=8.0}"},
       "model.rope_scaling.type: required key is missing"},
      {"unknown rope_scaling type", B, {"model.arch=llama", R"(model.rope_scaling={type="yarn"})"},
       "model.rope_scaling.type: unknown value \"yarn\" (expected one of: none, llama3)"},
      {"llama3 without original_max_position_embeddings", B,
       {"model.arch=llama", R"(model.rope_scaling={type="llama3",factor=8.0,low_freq_factor=1.0,high_freq_factor=4.0})"},
       "model.rope_scaling.original_max_position_embeddings: required key is missing"},
      {"llama3 factor below 1 over the 1b flavor", B,
       {"model.arch=llama", "model.flavor=1b", "model.rope_scaling.factor=0.5"},
       "model.rope_scaling.factor: must be >= 1 (how much longer the context becomes), got 0.5"},
      {"llama3 high_freq_factor not above low_freq_factor", B,
       {"model.arch=llama", "model.flavor=1b", "model.rope_scaling.high_freq_factor=1.0"},
       "model.rope_scaling.high_freq_factor: must be greater than low_freq_factor = 1, got 1"},
      {"llama3 original_max_position_embeddings 0", B,
       {"model.arch=llama", "model.flavor=1b", "model.rope_scaling.original_max_position_embeddings=0"},
       "model.rope_scaling.original_max_position_embeddings: must be >= 1, got 0"},
      {"training.micro_batch 0", edit(B, 17, "micro_batch = 0"), {},
       "job.toml:17: training.micro_batch: must be >= 1, got 0"},
      {"replica micro_batch 0", edit(H, 32, "micro_batch = 0"), {},
       "job.toml:32: parallel.replica[0].micro_batch: must be >= 1, got 0"},
      {"seq_len beyond max_seq_len", edit(B, 16, "seq_len = 128"), {},
       "job.toml:16: training.seq_len: seq_len = 128 exceeds model.max_seq_len = 64"},
      {"negative grad_clip", edit(B, 19, "grad_clip = -1.0"), {},
       "job.toml:19: training.grad_clip: must be >= 0 (0 disables clipping), got -1"},
      {"loss_scale_init below 1", edit(B, 19, "grad_clip = 1.0\nloss_scale_init = 0.5"), {},
       "job.toml:20: training.loss_scale_init: must be a finite number >= 1 (the first fp16 loss scale), got 0.5"},
      {"loss_scale_init not a number", edit(B, 19, "grad_clip = 1.0\nloss_scale_init = \"big\""), {},
       "job.toml:20: training.loss_scale_init: expected a number"},
      {"loss_scale_window 0", edit(B, 19, "grad_clip = 1.0\nloss_scale_window = 0"), {},
       "job.toml:20: training.loss_scale_window: must be >= 1, got 0"},
      {"loss_scale_window not an integer", edit(B, 19, "grad_clip = 1.0\nloss_scale_window = 2.5"), {},
       "job.toml:20: training.loss_scale_window: expected an integer"},
      {"eval_every without data.val", edit(B, 19, "eval_every = 5"), {},
       "job.toml:19: training.eval_every: evaluation needs data.val"},
      {"job.name with a slash", edit(B, 2, "name = \"exp/1\""), {},
       "job.toml:2: job.name: \"exp/1\" may hold only letters, digits, '-', '_' and '.'"},
      {"job.name that leaves runs/", edit(B, 2, "name = \"..\""), {},
       "job.toml:2: job.name: \"..\" is not a usable folder name"},
      {"device count 0 under the shorthand", edit(B, 37, "devices = { type = \"cpu\", count = 0 }"), {},
       "job.toml:37: cluster.node[0].devices.count: must be >= 1, got 0"},

      // ---- model rules ----------------------------------------------------------------------
      {"heads do not divide hidden", edit(B, 7, "flavor = \"tiny\"\nheads = 3"), {},
       "job.toml:8: model.heads: heads = 3 does not divide hidden = 64"},
      {"kv_heads do not divide heads", edit(H, 6, "kv_heads = 3"), {},
       "job.toml:6: model.kv_heads: kv_heads = 3 does not divide heads = 4"},
      {"kv_heads for gpt2", edit(B, 7, "flavor = \"tiny\"\nkv_heads = 4"), {},
       "job.toml:8: model.kv_heads: applies to llama only"},
      {"rope_theta for gpt2", edit(B, 7, "flavor = \"tiny\"\nrope_theta = 10000.0"), {},
       "job.toml:8: model.rope_theta: applies to llama only"},
      {"untied embeddings for gpt2", edit(B, 7, "flavor = \"tiny\"\ntie_embeddings = false"), {},
       "job.toml:8: model.tie_embeddings: gpt2 always ties the LM head to the token embedding"},
      {"vocab smaller than the tokenizer", edit(B, 11, "tokenizer = \"gpt2\""), {},
       "job.toml:5: model.vocab: vocab = 256 is smaller than the gpt2 tokenizer's 50257 ids"},
      {"vocab smaller than the tiktoken pattern", edit(B, 11, "tokenizer = \"tiktoken\"\ntokenizer_pattern = \"llama3\"\nvocab = \"" + kRanks + "\""), {},
       "job.toml:5: model.vocab: vocab = 256 is smaller than the tiktoken tokenizer's 128256 ids"},
      {"tiktoken without a pattern", edit(B, 11, "tokenizer = \"tiktoken\"\nvocab = \"" + kRanks + "\""), {},
       "job.toml:11: data.tokenizer: \"tiktoken\" needs data.tokenizer_pattern (one of cl100k, o200k, llama3)"},
      {"unknown tiktoken pattern", edit(B, 11, "tokenizer = \"tiktoken\"\ntokenizer_pattern = \"p50k\"\nvocab = \"" + kRanks + "\""), {},
       "job.toml:12: data.tokenizer_pattern: unknown pattern \"p50k\" (expected one of cl100k, o200k, llama3)"},
      {"tiktoken without a ranks file", edit(B, 11, "tokenizer = \"tiktoken\"\ntokenizer_pattern = \"o200k\""), {},
       "job.toml:11: data.tokenizer: \"tiktoken\" needs data.vocab, the path of its .tiktoken ranks file"},
      {"tiktoken ranks file missing", edit(B, 11, "tokenizer = \"tiktoken\"\ntokenizer_pattern = \"o200k\"\nvocab = \"no/such.tiktoken\""), {},
       "job.toml:13: data.vocab: no such file \"no/such.tiktoken\" (the tiktoken tokenizer's .tiktoken ranks file)"},
      {"pattern with another tokenizer", edit(B, 11, "tokenizer = \"gpt2\"\ntokenizer_pattern = \"cl100k\""), {},
       "job.toml:12: data.tokenizer_pattern: is for data.tokenizer = \"tiktoken\" only (data.tokenizer is \"gpt2\")"},

      // ---- cluster ----------------------------------------------------------------------------
      {"bf16 on cpu", edit(B, 18, "precision = \"bf16\""), {},
       "job.toml:18: training.precision: \"bf16\" needs GPUs with bf16 support, but localhost:0 is a \"cpu\""},
      {"bf16 on a Turing GPU", edit(H, {{19, "micro_batch = 2\nprecision = \"bf16\""}, {24, "devices = { type = \"T4\", count = 4 }"}}), {},
       "training.precision: \"bf16\" needs GPUs with bf16 support, but gpu-a:0 is a \"T4\" (use precision = \"fp16\""},
      {"fp64 on a GPU", edit(H, 19, "micro_batch = 2\nprecision = \"fp64\""), {},
       "job.toml:20: training.precision: \"fp64\" (the CPU numerics reference) runs on CPUs only, but gpu-a:0 is a "
       "\"A100-80G\" GPU"},
      {"bad grad_reduce_dtype", edit(B, 18, "grad_reduce_dtype = \"fp16\""), {},
       "job.toml:18: training.grad_reduce_dtype: unknown value \"fp16\" (expected one of: fp32, bf16)"},
      {"GPUs and CPUs in one job", edit(H, 28, "devices = { type = \"cpu\", count = 2 }"), {},
       "parallel: the groups mix GPUs and CPUs (gpu-a:0 is a \"A100-80G\", gpu-b:0 a \"cpu\"): a job trains on one "
       "kind of device"},
      {"unknown device type", edit(B, 37, "devices = { type = \"V100\", count = 2 }"), {},
       "job.toml:37: cluster.node[0].devices.type: unknown device type \"V100\" (known: cpu, V100-16G, V100-32G, T4,"},
      {"device count 0", edit(H, 28, "devices = { type = \"H100-80G\", count = 0 }"), {},
       "job.toml:28: cluster.node[1].devices.count: must be >= 1, got 0"},
      {"duplicate host", edit(H, 27, "host = \"gpu-a\""), {},
       "job.toml:27: cluster.node[1].host: host \"gpu-a\" is listed twice"},

      // ---- device lists -----------------------------------------------------------------------
      {"device list without ':'", edit(H, 34, "  devices = \"gpu-a\""), {},
       "job.toml:34: parallel.replica[0].stage[0].devices: bad device list \"gpu-a\": \"gpu-a\" lacks ':indices'"},
      {"reversed device range", edit(H, 34, "  devices = \"gpu-a:1-0\""), {},
       "job.toml:34: parallel.replica[0].stage[0].devices: bad device list \"gpu-a:1-0\": range 1-0 is reversed"},
      {"letters in a device index", edit(H, 34, "  devices = \"gpu-a:x\""), {},
       "job.toml:34: parallel.replica[0].stage[0].devices: bad device list \"gpu-a:x\": \"x\" is not an index"},
      {"negative device index", edit(H, 34, "  devices = \"gpu-a:-1\""), {},
       "job.toml:34: parallel.replica[0].stage[0].devices: bad device list \"gpu-a:-1\": negative index -1"},
      {"device listed twice in a list", edit(H, 34, "  devices = \"gpu-a:0,0-1\""), {},
       "job.toml:34: parallel.replica[0].stage[0].devices: bad device list \"gpu-a:0,0-1\": gpu-a:0 is listed twice"},
      {"empty device list", edit(H, 34, "  devices = \"\""), {},
       "job.toml:34: parallel.replica[0].stage[0].devices: bad device list \"\": expected host:indices"},
      {"device on an unknown host", edit(H, 43, "  devices = \"gpu-c:0-1\""), {},
       "job.toml:43: parallel.replica[1].stage[0].devices: host \"gpu-c\" is not a [[cluster.node]]"},
      {"device index past the node", edit(H, 37, "  devices = \"gpu-a:3-4\""), {},
       "job.toml:37: parallel.replica[0].stage[1].devices: device gpu-a:4 does not exist: node gpu-a has 4 devices (0-3)"},
      {"device used by two replicas", edit(H, 43, "  devices = \"gpu-a:2-3\""), {},
       "job.toml:43: parallel.replica[1].stage[0].devices: device gpu-a:2 is used twice: by "
       "parallel.replica[0].stage[1] and parallel.replica[1].stage[0]"},

      // ---- layer cover -----------------------------------------------------------------------
      {"layer covered twice", edit(H, 38, "  layers = \"3-7\""), {},
       "job.toml:38: parallel.replica[0].stage[1].layers: layer 3 is covered twice"},
      {"gap between stages", edit(H, 35, "  layers = \"0-1\""), {},
       "job.toml:38: parallel.replica[0].stage[1].layers: layers 2-3 are not covered by any stage"},
      {"layers missing at the end", edit(H, 38, "  layers = \"4-5\""), {},
       "job.toml:38: parallel.replica[0].stage[1].layers: layers 6-7 are not covered by any stage (model.layers = 8)"},
      {"layer range past model.layers", edit(H, 44, "  layers = \"0-8\""), {},
       "job.toml:44: parallel.replica[1].stage[0].layers: layers \"0-8\" go past the model's 8 layers (0-7)"},
      {"reversed layer range", edit(H, 44, "  layers = \"7-0\""), {},
       "job.toml:44: parallel.replica[1].stage[0].layers: bad layer range \"7-0\": range 7-0 is reversed"},

      // ---- tensor-parallel degree -------------------------------------------------------------
      {"tp does not divide heads", edit(H, {{34, "  devices = \"gpu-a:0-2\""}, {37, "  devices = \"gpu-a:3\""}}), {},
       "job.toml:34: parallel.replica[0].stage[0].devices: tp = 3 (gpu-a:0-2) does not divide model.heads = 4"},
      {"tp does not divide kv_heads", edit(H, 6, "kv_heads = 1"), {},
       "job.toml:34: parallel.replica[0].stage[0].devices: tp = 2 (gpu-a:0-1) does not divide model.kv_heads = 1"},
      {"tp does not divide ffn_hidden", edit(H, 7, "ffn_hidden = 191"), {},
       "job.toml:34: parallel.replica[0].stage[0].devices: tp = 2 (gpu-a:0-1) does not divide model.ffn_hidden = 191"},

      // ---- batch split --------------------------------------------------------------------------
      {"batch_share leaves fractional sequences", edit(H, 41, "batch_share = 1.5"), {},
       "job.toml:31: parallel.replica[0].batch_share: training.global_batch = 12 does not split into whole "
       "sequences by batch_share (replica 0 would get 4.800)"},
      {"replica batch not a multiple of micro_batch", edit(H, 32, "micro_batch = 3"), {},
       "job.toml:32: parallel.replica[0].micro_batch: replica 0's batch of 4 sequences does not split into "
       "micro-batches of 3"},

      // ---- shorthand ----------------------------------------------------------------------------
      {"dp*tp*pp does not match the cluster", edit(B, 40, "dp = 3"), {},
       "job.toml:39: parallel: dp*tp*pp = 3*1*1 = 3 devices, but [cluster] has 2"},
      {"shorthand and groups together",
       B + "\n[[parallel.replica]]\n  [[parallel.replica.stage]]\n  devices = \"localhost:0-1\"\n", {},
       "job.toml:40: parallel.dp: use either the dp/tp/pp shorthand or [[parallel.replica]] groups, not both"},
      {"shorthand via --set on a grouped file", H, {"parallel.tp=2"},
       "--set parallel.tp=2: parallel.tp: use either the dp/tp/pp shorthand or [[parallel.replica]] groups"},
      {"auto next to the shorthand", B + "auto = true\n", {},
       "job.toml:41: parallel.auto: plans the layout at launch: drop the dp/tp/pp shorthand and the "
       "[[parallel.replica]] groups"},
      {"auto next to groups", H, {"parallel.auto=true"},
       "--set parallel.auto=true: parallel.auto: plans the layout at launch: drop the dp/tp/pp shorthand"},
      {"a profile without auto", edit(B, 40, "profile = \"profile.toml\""), {},
       "job.toml:40: parallel.profile: is the profile [parallel] auto = true plans from; set auto = true"},
      {"bad order", B + "order = \"dp-tp\"\n", {},
       "job.toml:41: parallel.order: \"dp-tp\" must name dp, pp and tp once each"},
      {"pp larger than layers", edit(B, {{37, "devices = { type = \"cpu\", count = 4 }"}, {40, "pp = 4"}}), {},
       "job.toml:40: parallel.pp: pp = 4 stages for only 2 layers (model.layers)"},
      {"tp*pp does not divide the devices", edit(B, 40, "tp = 4"), {},
       "job.toml:40: parallel.tp: tp*pp = 4 does not divide the 2 devices of [cluster]"},
      {"zero is 0 or 1", B + "zero = 2\n", {},
       "job.toml:41: parallel.zero: must be 0 (optimizer state replicated) or 1 (ZeRO-1), got 2"},
      {"zero on a grouped file via --set", H, {"parallel.zero=3"}, "--set parallel.zero=3: parallel.zero: must be 0"},
      {"an unknown recompute mode", B + "recompute = \"partial\"\n", {},
       "job.toml:41: parallel.recompute: unknown value \"partial\" (expected one of: none, selective, full)"},
      {"an unknown recompute mode of a stage", edit(H, 35, "  layers = \"0-3\"\n  recompute = \"all\""), {},
       "job.toml:36: parallel.replica[0].stage[0].recompute: unknown value \"all\""},
      {"recompute with a planned layout", edit(B, 40, "auto = true\nrecompute = \"full\""), {},
       "job.toml:41: parallel.recompute: is not planned yet with auto = true"},

      // ---- strategies and switches ([[parallel.strategy]], [[parallel.switch]]) -------------------
      {"a switch to an unknown strategy", edit(S, 46, "strategy = \"tp3\""), {},
       "job.toml:46: parallel.switch[0].strategy: unknown strategy \"tp3\" (known: default, tp2)"},
      {"two strategies of one name", S + "[[parallel.strategy]]\nname = \"tp2\"\ndp = 2\n", {},
       "job.toml:48: parallel.strategy[1].name: strategy \"tp2\" is defined twice (also parallel.strategy[0], job.toml:42)"},
      {"a strategy named default", edit(S, 42, "name = \"default\""), {},
       "job.toml:42: parallel.strategy[0].name: \"default\" names [parallel] itself"},
      {"a strategy without a name", edit(S, 42, ""), {}, "job.toml:41: parallel.strategy[0].name: required key is missing"},
      {"switches not in increasing step order", S + "[[parallel.switch]]\nat_step = 4\nstrategy = \"default\"\n", {},
       "job.toml:48: parallel.switch[1].at_step: at_step = 4 does not come after the previous switch's 4"},
      {"a switch at or past the last step", edit(S, 45, "at_step = 10"), {},
       "job.toml:45: parallel.switch[0].at_step: at_step = 10 is not before the last step (training.steps = 10)"},
      {"a switch before any step", S, {"parallel.switch[0].at_step=0"},
       "--set parallel.switch[0].at_step=0: parallel.switch[0].at_step: must be >= 1"},
      {"a strategy naming devices the cluster lacks", edit(S, 43, "tp = 2\ndevices = \"localhost:1-2\""), {},
       "job.toml:44: parallel.strategy[0].devices: device localhost:2 does not exist: node localhost has 2 devices"},
      {"a strategy's layout checked like [parallel]", edit(S, 43, "tp = 3"), {},
       "job.toml:43: parallel.strategy[0].tp: tp*pp = 3 does not divide the 2 devices of [cluster]"},
      {"a strategy's groups checked like [parallel]",
       edit(S, 43, "[[parallel.strategy.replica]]\n  [[parallel.strategy.replica.stage]]\n  devices = \"localhost:0\"\n"
                   "  layers = \"0-0\""), {},
       "job.toml:46: parallel.strategy[0].replica[0].stage[0].layers: layer 1 is not covered by any stage"},
      {"an unknown key in a strategy", edit(S, 43, "tq = 2"), {}, "parallel.strategy[0]"},
      {"shorthand devices and groups together", edit(B, 40, "devices = \"localhost:0-1\"\n[[parallel.replica]]"), {},
       "job.toml:40: parallel.devices: use either the dp/tp/pp shorthand or [[parallel.replica]] groups, not both"},

      // ---- buckets ([[parallel.bucket]]) ------------------------------------------------------------
      {"buckets without packed documents", K, {},
       "job.toml:46: parallel.bucket[0].strategy: buckets cut a batch by document length: they need data.packing = "
       "\"documents\" (data.packing is \"windows\")"},
      {"a bucket under an unknown strategy", edit(K, 48, "strategy = \"tp3\""), D,
       "job.toml:48: parallel.bucket[1].strategy: unknown strategy \"tp3\" (known: default, tp2)"},
      {"bucket max_len not increasing", edit(K, 47, "[[parallel.bucket]]\nmax_len = 16") + "[[parallel.bucket]]\n"
       "strategy = \"default\"\n", D,
       "job.toml:48: parallel.bucket[1].max_len: max_len = 16 does not exceed the previous bucket's 16"},
      {"the last bucket with a max_len", edit(K, 48, "max_len = 20\nstrategy = \"tp2\""), D,
       "job.toml:48: parallel.bucket[1].max_len: the last bucket takes every longer document and has no max_len"},
      {"a bucket before the last without max_len", edit(K, 45, ""), D,
       "job.toml:46: parallel.bucket[0].strategy: max_len is missing: every bucket but the last needs one"},
      {"a bucket max_len of seq_len", edit(K, 45, "max_len = 32"), D,
       "job.toml:45: parallel.bucket[0].max_len: max_len = 32 is not below training.seq_len = 32"},
      {"a bucket max_len below 1", edit(K, 45, "max_len = 0"), D,
       "job.toml:45: parallel.bucket[0].max_len: must be >= 1, got 0"},
      {"buckets and switches together", K + "[[parallel.switch]]\nat_step = 4\nstrategy = \"tp2\"\n", D,
       "job.toml:46: parallel.bucket[0].strategy: buckets cannot be combined with [[parallel.switch]]"},
      {"a bucket under a ZeRO-1 strategy", edit(K, 43, "tp = 2\nzero = 1"), D,
       "job.toml:49: parallel.bucket[1].strategy: strategy \"tp2\" has zero = 1, but a bucket's strategy only "
       "computes on a copy of the parameters and holds no optimizer state"},
      // ---- buckets planned per step ([parallel] auto = true over documents and strategies) --------
      {"auto with buckets given", edit(K, 40, "auto = true"), D,
       "job.toml:46: parallel.bucket[0].strategy: [parallel] auto = true plans every step's buckets itself"},
      {"planned buckets and switches together", edit(S, 40, "auto = true"), D,
       "job.toml:46: parallel.switch[0].strategy: [parallel] auto = true with documents plans a layout per batch"},
      {"planned buckets with a ZeRO-1 strategy", edit(kBase + "[[parallel.strategy]]\nname = \"tp2\"\ntp = 2\nzero = 1\n", 40,
                                                       "auto = true"), D,
       "job.toml:44: parallel.strategy[0].zero: the per-batch layouts [parallel] auto = true plans run a strategy on "
       "a copy of the parameters with no optimizer state of its own"},
      {"a bucket without a strategy", edit(K, 46, ""), D, "job.toml:44: parallel.bucket[0].strategy: required key is missing"},
      {"an unknown key in a bucket", edit(K, 45, "max_length = 16"), D, "job.toml:45: parallel.bucket[0].max_length"},

      // ---- emulated links ----------------------------------------------------------------------
      {"negative emulated bandwidth", edit(B, 37, "devices = { type = \"cpu\", count = 2 }\nemulate_link_gbps = -1"), {},
       "job.toml:38: cluster.node[0].emulate_link_gbps: must be a number >= 0 (0: not emulated), got -1"},
      {"emulated link on a GPU node",
       edit(B, 37, "devices = { type = \"A100-80G\", count = 2 }\nemulate_link_latency_us = 5"), {},
       "job.toml:38: cluster.node[0].emulate_link_latency_us: only CPU nodes emulate links"},
      {"rehearse is a bool", edit(B, 34, "[cluster]\nrehearse = 1"), {}, "job.toml:35: cluster.rehearse"},

      // ---- --set syntax ---------------------------------------------------------------------------
      {"--set without '='", B, {"training.steps"},
       "--set training.steps: expected table.key=value (e.g. --set training.steps=100)"},
      {"--set array index out of range", H, {"parallel.replica[2].micro_batch=1"},
       "--set parallel.replica[2].micro_batch=1: parallel.replica has 2 entries, index 2 is out of range"},
      {"--set indexing a table that is not an array", B, {"training[0].steps=1"},
       "--set training[0].steps=1: training is not an array of tables"},
  };
}

}  // namespace

TEST_CASE("both base jobs are valid and load without warnings", "[config_errors]") {
  for (const std::string* base : {&kBase, &kHetero}) {
    hetu::config::LoadedConfig loaded = load_job_config_text(*base, "job.toml", {});
    CHECK(loaded.warnings.empty());
  }
  CHECK(load_job_config_text(kHetero, "job.toml", {}).config.parallel.replicas.size() == 2);
}

TEST_CASE("bad job files and --set overrides name the place and the problem", "[config_errors]") {
  static const std::vector<BadCase> cases = bad_cases();
  REQUIRE(cases.size() >= 48);
  for (const BadCase& c : cases) {
    DYNAMIC_SECTION(c.name) {
      INFO("case: " << c.name);
      INFO("job file:\n" << c.toml);
      const std::string message = load_error(c.toml, c.overrides);
      INFO("message: " << message);
      CHECK_THAT(message, Catch::Matchers::Contains(c.expected_substring));
    }
  }
}

TEST_CASE("a TOML syntax error names line and column", "[config_errors]") {
  const std::string message = load_error(edit(kBase, 15, "global_batch = = 8"), {});
  CHECK_THAT(message, Catch::Matchers::StartsWith("job.toml:15:16: TOML syntax error"));
  const std::string unclosed = load_error(edit(kBase, 2, "name = \"t"), {});
  CHECK_THAT(unclosed, Catch::Matchers::StartsWith("job.toml:2:"));
  CHECK_THAT(unclosed, Catch::Matchers::Contains("TOML syntax error"));
}

TEST_CASE("advisory rules give warnings, not errors", "[config_errors]") {
  SECTION("a tp group spanning two nodes") {
    // gpu-b:0-1 are freed by moving replica 1 to gpu-b; replica 0's second stage spans both nodes.
    const std::string toml =
        edit(kHetero, {{37, "  devices = \"gpu-a:2; gpu-b:0\""}, {43, "  devices = \"gpu-a:3; gpu-b:1\""}});
    const auto loaded = load_job_config_text(toml, "job.toml", {});
    REQUIRE(loaded.warnings.size() >= 2);
    CHECK_THAT(loaded.warnings[0],
               Catch::Matchers::StartsWith("job.toml:37: parallel.replica[0].stage[1].devices: the tp group "
                                           "gpu-a:2; gpu-b:0 spans 2 nodes"));
    bool second = false;
    for (const std::string& w : loaded.warnings) {
      second = second || w.find("job.toml:43: parallel.replica[1].stage[0].devices: the tp group gpu-a:3; "
                                "gpu-b:1 spans 2 nodes") != std::string::npos;
    }
    CHECK(second);
  }
  SECTION("fewer micro-batches than pipeline stages") {
    const auto loaded = load_job_config_text(edit(kHetero, 32, "micro_batch = 4"), "job.toml", {});
    REQUIRE(loaded.warnings.size() == 1);
    CHECK_THAT(loaded.warnings[0],
               Catch::Matchers::StartsWith("job.toml:32: parallel.replica[0].micro_batch: replica 0 runs 1 "
                                           "micro-batch through 2 pipeline stages"));
  }
  SECTION("devices of the cluster that no group uses") {
    const auto loaded = load_job_config_text(edit(kBase, {{37, "devices = { type = \"cpu\", count = 3 }"},
                                                          {40, "replica = [{ stage = [{ devices = \"localhost:0-1\" }] }]"}}),
                                             "job.toml", {});
    REQUIRE(loaded.warnings.size() == 1);
    CHECK_THAT(loaded.warnings[0], Catch::Matchers::Contains("1 device(s) of [cluster] are in no group"));
  }
  SECTION("a strategy no switch names") {
    const auto loaded = load_job_config_text(kBase + "[[parallel.strategy]]\nname = \"tp2\"\ntp = 2\n", "job.toml", {});
    REQUIRE(loaded.warnings.size() == 1);
    CHECK(loaded.warnings[0] == "job.toml:42: parallel.strategy[0].name: strategy \"tp2\" is never switched to (no "
                                "[[parallel.switch]] names it)");
  }
  SECTION("recompute: [parallel]'s for every stage, a stage's own, a strategy's; kept by config.resolved.toml") {
    using hetu::autograd::Recompute;
    const auto loaded = load_job_config_text(
        edit(kHetero, {{35, "  layers = \"0-3\"\n  recompute = \"selective\""}}) +
            "\n[parallel]\nrecompute = \"full\"\n[[parallel.strategy]]\nname = \"dp\"\ndp = 6\nrecompute = \"selective\"\n"
            "[[parallel.switch]]\nat_step = 2\nstrategy = \"dp\"\n",
        "job.toml", {});
    const auto& replicas = loaded.config.parallel.replicas;
    REQUIRE(replicas.size() == 2);
    CHECK(replicas[0].stages[0].recompute == Recompute::selective);
    CHECK(replicas[0].stages[1].recompute == Recompute::full);
    CHECK(replicas[1].stages[0].recompute == Recompute::full);
    REQUIRE(loaded.config.strategies.size() == 1);
    for (const auto& replica : loaded.config.strategies[0].parallel.replicas) {
      CHECK(replica.stages[0].recompute == Recompute::selective);
    }
    const auto again = load_job_config_text(hetu::config::to_toml(loaded.config), "resolved.toml", {});
    CHECK(again.config.parallel == loaded.config.parallel);
    REQUIRE(again.config.strategies.size() == 1);  // written as groups (its dp shorthand becomes a comment)
    CHECK(again.config.strategies[0].parallel.replicas == loaded.config.strategies[0].parallel.replicas);
    const auto plain = load_job_config_text(kBase, "job.toml", {});
    CHECK(plain.config.parallel.replicas[0].stages[0].recompute == Recompute::none);
  }
  SECTION("devices idle under [parallel] but used by a strategy are no warning") {
    const auto loaded = load_job_config_text(
        edit(kBase, 40, "devices = \"localhost:1\"\n[[parallel.strategy]]\nname = \"both\"\ndp = 2\n"
                        "[[parallel.switch]]\nat_step = 2\nstrategy = \"both\""), "job.toml", {});
    CHECK(loaded.warnings.empty());
    REQUIRE(loaded.config.parallel.replicas.size() == 1);
    CHECK(loaded.config.parallel.replicas[0].stages[0].devices == std::vector<hetu::config::DeviceId>{{"localhost", 1}});
    CHECK(loaded.config.strategy_after(1) == "default");
    CHECK(loaded.config.strategy_after(2) == "both");
    CHECK(loaded.config.strategy_devices().size() == 2);
  }
  SECTION("buckets with ZeRO-1 on the default strategy load") {
    const auto loaded = load_job_config_text(kBase + kBuckets, "job.toml", {"data.packing=\"documents\"", "parallel.zero=1"});
    CHECK(loaded.config.parallel.zero == 1);
    CHECK(loaded.config.buckets.size() == 2);
  }
  SECTION("a strategy only buckets name is no warning, and buckets survive config.resolved.toml") {
    const auto loaded = load_job_config_text(kBase + kBuckets, "job.toml", {"data.packing=\"documents\""});
    CHECK(loaded.warnings.empty());
    REQUIRE(loaded.config.buckets.size() == 2);
    CHECK(loaded.config.buckets[0] == hetu::config::BucketSection{16, "default"});
    CHECK(loaded.config.buckets[1] == hetu::config::BucketSection{std::nullopt, "tp2"});
    const auto again = load_job_config_text(hetu::config::to_toml(loaded.config), "resolved.toml", {});
    CHECK(again.config.buckets == loaded.config.buckets);
  }
  SECTION("a warm-up longer than the run is capped at training.steps") {
    const auto loaded = load_job_config_text(edit(kBase, 27, "warmup_steps = 11"), "job.toml", {});
    REQUIRE(loaded.warnings.size() == 1);
    CHECK(loaded.warnings[0] ==
          "job.toml:27: lr_schedule.warmup_steps: warmup_steps = 11 exceeds training.steps = 10; capped at 10");
    CHECK(loaded.config.lr_schedule.warmup_steps == 10);
    const auto shortened = load_job_config_text(kBase, "job.toml", {"training.steps=1"});
    REQUIRE(shortened.warnings.size() == 1);
    CHECK_THAT(shortened.warnings[0], Catch::Matchers::StartsWith("job.toml:27: lr_schedule.warmup_steps:"));
    CHECK(shortened.config.lr_schedule.warmup_steps == 1);
    const auto equal = load_job_config_text(edit(kBase, 27, "warmup_steps = 10"), "job.toml", {});
    CHECK(equal.warnings.empty());
    CHECK(equal.config.lr_schedule.warmup_steps == 10);
  }
  SECTION("the same through --set names the flag") {
    const auto loaded = load_job_config_text(kHetero, "job.toml", {"parallel.replica[0].micro_batch=4"});
    REQUIRE(loaded.warnings.size() == 1);
    CHECK_THAT(loaded.warnings[0],
               Catch::Matchers::StartsWith("--set parallel.replica[0].micro_batch=4: parallel.replica[0].micro_batch:"));
  }
}

TEST_CASE("a device catalogue file may emulate slower CPUs, and its keys are checked", "[config_errors]") {
  hetu::test::TempDir dir("catalog_emulation");
  auto job_with = [&](const std::string& device) {
    dir.write("catalog.toml", "[[device]]\nname = \"cpu-slow\"\n" + device + "peak_tflops_fp32 = 0.05\n");
    return edit(kBase, {{34, "[cluster]\ndevice_catalog = \"" + dir.file("catalog.toml") + "\""},
                        {37, "devices = { type = \"cpu-slow\", count = 2 }"}});
  };
  const auto loaded = load_job_config_text(job_with("kind = \"cpu\"\nmemory_gib = 4\nemulate_slowdown = 2.5\n"),
                                           "job.toml", {});
  const hetu::config::DeviceProfile* slow = loaded.catalog.find("cpu-slow");
  REQUIRE(slow != nullptr);
  CHECK(slow->emulate_slowdown == 2.5);
  CHECK_FALSE(slow->emulate_cpu_time);
  CHECK(slow->memory_gib == 4);
  CHECK(load_job_config_text(job_with("kind = \"cpu\"\nemulate_slowdown = 2\nemulate_cpu_time = true\n"), "job.toml", {})
            .catalog.find("cpu-slow")->emulate_cpu_time);
  CHECK_THAT(load_error(job_with("kind = \"gpu\"\nemulate_cpu_time = true\n"), {}),
             Catch::Matchers::Contains("emulate_cpu_time: only CPU kinds emulate a slowdown (device \"cpu-slow\" "
                                       "is a gpu)"));
  CHECK(loaded.catalog.find("cpu")->emulate_slowdown == 1);
  CHECK(loaded.config.cluster.device_catalog == dir.file("catalog.toml"));  // absolute: the resolved job finds it
  CHECK_THAT(load_error(job_with("kind = \"cpu\"\nemulate_slowdown = 0.5\n"), {}),
             Catch::Matchers::Contains("catalog.toml:4: device[0].emulate_slowdown: must be a number >= 1, got 0.5"));
  CHECK_THAT(load_error(job_with("kind = \"gpu\"\nemulate_slowdown = 2\n"), {}),
             Catch::Matchers::Contains("emulate_slowdown: only CPU kinds can emulate a slowdown (device \"cpu-slow\" "
                                       "is a gpu)"));
  CHECK_THAT(load_error(job_with("kind = \"cpu\"\nmemory_gib = -1\n"), {}),
             Catch::Matchers::Contains("memory_gib: must be >= 0, got -1"));
}

TEST_CASE("precision fp16 runs on CPUs and on GPU types with an fp16 peak, and is refused by name elsewhere",
          "[config_errors]") {
  hetu::test::TempDir dir("catalog_fp16");
  auto job_with = [&](const std::string& device) {
    dir.write("catalog.toml", "[[device]]\nname = \"turing\"\nkind = \"gpu\"\n" + device + "peak_tflops_fp32 = 10\n");
    return edit(kBase, {{18, "precision = \"fp16\""},
                        {34, "[cluster]\ndevice_catalog = \"" + dir.file("catalog.toml") + "\""},
                        {37, "devices = { type = \"turing\", count = 2 }"}});
  };
  const auto cpu = load_job_config_text(edit(kBase, 18, "precision = \"fp16\""), "job.toml", {});
  CHECK(cpu.config.training.precision == hetu::config::Precision::fp16);
  CHECK(cpu.config.training.loss_scale_init == 65536);
  CHECK(cpu.config.training.loss_scale_window == 1000);
  const auto gpu = load_job_config_text(job_with("peak_tflops_fp16 = 40\n"), "job.toml", {});
  CHECK(gpu.catalog.find("turing")->peak_tflops_fp16 == 40);
  CHECK_THAT(load_error(job_with(""), {}),
             Catch::Matchers::Contains("job.toml:18: training.precision: \"fp16\" needs GPUs with an fp16 path "
                                       "(peak_tflops_fp16 > 0 in the device catalogue), but localhost:0 is a \"turing\""));
  CHECK_THAT(load_error(job_with("peak_tflops_fp16 = -1\n"), {}),
             Catch::Matchers::Contains("catalog.toml:4: device[0].peak_tflops_fp16: must be >= 0 (0: no fp16 path), got -1"));
  // Every builtin GPU has an fp16 path; where it has bf16 the dense figures are the same.
  const hetu::config::DeviceCatalog builtin = hetu::config::DeviceCatalog::builtin();
  for (const hetu::config::DeviceProfile& type : builtin.types()) {
    CAPTURE(type.name);
    if (type.kind == hetu::config::DeviceKind::gpu) CHECK(type.peak_tflops_fp16 > 0);
    if (type.peak_tflops_bf16 > 0) CHECK(type.peak_tflops_fp16 == type.peak_tflops_bf16);
  }
  // The resolved job keeps the keys (written, read back equal).
  const auto set = load_job_config_text(edit(kBase, 18, "precision = \"fp16\"\nloss_scale_init = 1024\nloss_scale_window = 7"),
                                        "job.toml", {});
  const auto again = load_job_config_text(hetu::config::to_toml(set.config), "resolved.toml", {});
  CHECK(again.config.training.precision == hetu::config::Precision::fp16);
  CHECK(again.config.training.loss_scale_init == 1024);
  CHECK(again.config.training.loss_scale_window == 7);
}

TEST_CASE("a tiktoken job loads and its resolved form round-trips", "[config]") {
  const std::string text =
      edit(kBase, {{5, "[model]\nvocab = 100352"}, {11, "tokenizer = \"tiktoken\"\ntokenizer_pattern = \"cl100k\"\nvocab = \"" + kRanks + "\""}});
  const auto loaded = load_job_config_text(text, "job.toml", {});
  CHECK(loaded.config.data.tokenizer == hetu::config::Tokenizer::tiktoken);
  CHECK(loaded.config.data.tokenizer_pattern == "cl100k");
  CHECK(loaded.config.data.vocab == kRanks);
  const auto again = load_job_config_text(hetu::config::to_toml(loaded.config), "resolved.toml", {});
  CHECK(again.config.data == loaded.config.data);
  CHECK(again.config.model.vocab == 100352);
}
