// The hetu subcommands as plain functions, one file each (cmd_*.cpp). main.cpp owns the
// CLI11 definitions and calls these; they return the process exit code and throw
// hetu::UsageError (exit 2) or hetu::Error (exit 1) on failure.
#pragma once

#include <string>
#include <vector>

#include "lib/config/config.h"
#include "lib/core/device.h"
#include "lib/launch/supervisor.h"
#include "lib/util/logging.h"

namespace hetu::app {

struct ConfigOptions {
  std::string config_path;             // empty: the embedded default job
  std::vector<std::string> overrides;  // --set table.key=value (without "--set")
  LogLevel log_level = LogLevel::info;
};

struct TrainOptions : ConfigOptions {
  bool dry_run = false;
  int64_t stop_at_step = 0;  // pause after this step (checkpoint, exit 0); resume continues
  std::string state_dir;     // hetu launch's snapshot folder (lib/checkpoint/recovery_store.h); empty: none
};

struct LaunchOptions : ConfigOptions {
  launch::SupervisorOptions supervisor;  // its config_path and overrides are filled from ConfigOptions
};

struct PlanOptions : ConfigOptions {
  bool evaluate = false;  // predict the job's own layout (no search)
  bool exhaustive = false;  // list every layout of the space (small clusters), the search's reference
  bool json = false;
  int64_t top = 5;        // rows of the ranked table
  std::string out;        // write the best layout here as a job file
  std::string profile;    // hetu profile's file: measured device types
};

struct ProfileOptions : ConfigOptions {
  std::string out = "profile.toml";
};

struct BenchOptions {
  int threads = 0;             // 0: HETU_NUM_THREADS or every core
  bool quick = false;          // shorter timings (smoke test)
  std::string device = "cpu";  // cpu or cuda:N
  std::string dtype;           // f32, or bf16 on a CUDA device; empty: f32 (CPU), both (GPU)
};

struct BenchCommOptions {
  int iterations = 20;
  std::string device = "cpu";  // cpu: MPI over host buffers; cuda:N: NCCL, one GPU per rank
};

struct VerifyOptions {
  std::string reference;  // the .h5 dump
  bool all = false;       // list every tensor, not only the summary
};

struct GenerateOptions {
  std::string checkpoint;   // step folder, checkpoints/ folder or run folder
  std::string prompt;
  int64_t max_tokens = 200;
  double temperature = 0.8; // 0: greedy
  int64_t top_k = 40;       // 0: the whole vocabulary
  uint64_t seed = 1234;
  std::string vocab_dir;    // gpt2 vocab folder or tiktoken ranks file; default: the job's data.vocab (gpt2: or $HETU_GPT2_VOCAB)
  int threads = 0;
};

struct CkptInspectOptions {
  std::string checkpoint;  // any format `ckpt convert` reads
  bool json = false;       // one JSON object on stdout, for scripts
};

struct CkptConvertOptions {
  std::string input;       // hetu checkpoint, HF folder / .safetensors, llm.c .bin
  std::string output;      // a new folder (hetu, hf) or file (llmc)
  std::string to;          // hetu | hf | llmc; empty: hetu for hf/llmc input
  std::string dtype = "f32";
  std::string max_shard_size = "5GB";  // hf output: shard above this many bytes
};

struct CkptLogitsOptions {
  std::string checkpoint;  // any format `ckpt convert` reads
  std::string tokens;      // text file: one sequence of whitespace-separated ids per line
  std::string out;         // safetensors file with "logits" (B, T, vocab) f32 and "tokens" (B, T) i32
  int threads = 0;
};

struct CkptReshardOptions {
  std::string input;                   // hetu checkpoint (step, checkpoints or run folder)
  std::string output;                  // new or empty folder
  std::string config;                  // reshard: the job whose layout to write
  std::vector<std::string> overrides;  // reshard: --set for that job
};

struct ReportOptions {
  std::vector<std::string> runs;  // run folders (out_dir of hetu train); several are overlaid
  std::string out;                // the HTML file; empty: RUN_DIR/report.html of the first run
  std::string png_dir;            // also one PNG per chart here; empty: none
};

int run_config_check(const ConfigOptions& options);
// `hetu report` (app/cmd_report.cpp).
int run_report(const ReportOptions& options);
// `hetu ckpt consolidate|reshard` (app/cmd_ckpt_reshard.cpp).
int run_ckpt_consolidate(const CkptReshardOptions& options);
int run_ckpt_reshard(const CkptReshardOptions& options);
// `hetu ckpt ...` (app/cmd_ckpt_*.cpp).
int run_ckpt_inspect(const CkptInspectOptions& options);
int run_ckpt_convert(const CkptConvertOptions& options);
int run_ckpt_logits(const CkptLogitsOptions& options);
int run_generate(const GenerateOptions& options);
int run_verify(const VerifyOptions& options);
int run_bench_ops(const BenchOptions& options);
// `hetu bench comm` under mpirun: nccl-tests style bandwidth table (app/cmd_bench_comm.cpp).
int run_bench_comm(const BenchCommOptions& options);
int run_train(const TrainOptions& options);
int run_launch(const LaunchOptions& options);
// `hetu plan JOB [--evaluate] [--top K] [--out F] [--json]`: layouts priced by the cost model (app/cmd_plan.cpp).
int run_plan(const PlanOptions& options);
// `hetu profile JOB [--out profile.toml]`: measured times of the job's model per CPU type (app/cmd_profile.cpp).
int run_profile(const ProfileOptions& options);
int run_env();

// Loads options.config_path (or the embedded default job) with the overrides applied.
config::LoadedConfig load_job(const ConfigOptions& options);

// "hetu 0.1.0 (git abc1234, Release)"
std::string version_string();

}  // namespace hetu::app
